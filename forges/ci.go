package forges

// Combine is the combined state of checks: failure when any failed, else
// pending when any is pending, else success when any passed, else none.
func Combine(checks []Check) CIState {
	state := CINone
	for _, c := range checks {
		switch c.State {
		case CIFailure:
			return CIFailure
		case CIPending:
			state = CIPending
		case CISuccess:
			if state == CINone {
				state = CISuccess
			}
		}
	}
	return state
}
