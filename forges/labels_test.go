package forges

import (
	"regexp"
	"strings"
	"testing"
)

func TestCatalogue(t *testing.T) {
	hex6 := regexp.MustCompile(`^[0-9a-f]{6}$`)
	seen := map[string]bool{}
	count := map[string]int{}
	for _, l := range Catalogue() {
		if seen[l.Name] {
			t.Errorf("duplicate label %s", l.Name)
		}
		seen[l.Name] = true
		if !hex6.MatchString(l.Color) || l.Description == "" {
			t.Errorf("label %+v: want six lowercase hex digits and a description", l)
		}
		for _, p := range []string{StatusPrefix, CommandPrefix, TypePrefix} {
			if strings.HasPrefix(l.Name, p) {
				count[p]++
			}
		}
	}
	// DESIGN.md section 3: 9 statuses, 4 commands, 4 types.
	if count[StatusPrefix] != 9 || count[CommandPrefix] != 4 || count[TypePrefix] != 4 || len(seen) != 17 {
		t.Errorf("catalogue counts = %v (%d labels), want 9 status, 4 ai, 4 type", count, len(seen))
	}
	for _, n := range []string{"status::waiting_validation", "status::blocked", "ai::validate_plan", "ai::retry_until_green", "type::question"} {
		if !seen[n] {
			t.Errorf("catalogue lacks %s", n)
		}
	}
}

func TestSameColor(t *testing.T) {
	if !SameColor("#E11D21", "e11d21") || SameColor("e11d21", "e11d22") {
		t.Error("SameColor compares wrongly")
	}
}
