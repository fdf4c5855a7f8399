package forges

import "testing"

func TestCombine(t *testing.T) {
	for _, tc := range []struct {
		states []CIState
		want   CIState
	}{
		{nil, CINone},
		{[]CIState{CISuccess, CISuccess}, CISuccess},
		{[]CIState{CISuccess, CIPending}, CIPending},
		{[]CIState{CIPending, CIFailure, CISuccess}, CIFailure},
		{[]CIState{CINone}, CINone},
	} {
		var checks []Check
		for _, s := range tc.states {
			checks = append(checks, Check{Name: string(s), State: s})
		}
		if got := Combine(checks); got != tc.want {
			t.Errorf("Combine(%v) = %s, want %s", tc.states, got, tc.want)
		}
	}
}
