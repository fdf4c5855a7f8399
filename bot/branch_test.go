package bot

import "testing"

func TestBranchName(t *testing.T) {
	tests := []struct {
		prefix string
		iid    int64
		title  string
		want   string
	}{
		// The example of docs/design.md section 3.
		{"agent/", 7, "Add a name on ai client and resume from it #6 #7", "agent/issue-7-add-a-name-on-ai-client-and-resume-from"},
		{"agent/", 1, "  Fix: crash -- on   start!! ", "agent/issue-1-fix-crash-on-start"},
		{"", 12, "Ünïcode títle ☃ ok", "issue-12-n-code-t-tle-ok"},
		{"agent/", 3, "!!!", "agent/issue-3"},
		{"agent/", 3, "", "agent/issue-3"},
		{"bot/", 9, "abcdefghijklmnopqrstuvwxyz0123456789abcd-efgh", "bot/issue-9-abcdefghijklmnopqrstuvwxyz0123456789abcd"},
		{"agent/", 4, "a b c d e f g h i j k l m n o p q r s t u v w", "agent/issue-4-a-b-c-d-e-f-g-h-i-j-k-l-m-n-o-p-q-r-s-t"},
	}
	for _, tt := range tests {
		if got := BranchName(tt.prefix, tt.iid, tt.title); got != tt.want {
			t.Errorf("BranchName(%q, %d, %q) = %q, want %q", tt.prefix, tt.iid, tt.title, got, tt.want)
		}
	}
}
