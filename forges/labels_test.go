package forges

import "testing"

func TestSameColor(t *testing.T) {
	if !SameColor("#E11D21", "e11d21") || SameColor("e11d21", "e11d22") {
		t.Error("SameColor compares wrongly")
	}
}
