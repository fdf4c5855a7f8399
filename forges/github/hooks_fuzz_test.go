package github

import (
	"errors"
	"testing"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgetest"
)

type seed struct {
	event string
	body  []byte
}

// seeds are every payload of the corpus (../../testdata/github) with its
// X-GitHub-Event.
func seeds(t testing.TB) []seed {
	t.Helper()
	var out []seed
	for _, d := range forgetest.LoadCorpus(t, corpus) {
		out = append(out, seed{event: d.Header.Get(headerEvent), body: d.Body})
	}
	return out
}

// FuzzParse feeds Parse mutated payloads: it must never panic, must answer
// either an event or an error wrapping ErrMalformed, and an event it returns
// must be consistent with its type.
func FuzzParse(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s.event, s.body)
	}
	f.Fuzz(func(t *testing.T, event string, body []byte) {
		ev, err := Hooks{}.Parse(headers(event, "d"), body)
		if err != nil {
			if !errors.Is(err, forges.ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			if ev != nil {
				t.Fatalf("event and error both returned")
			}
			return
		}
		checkConsistent(t, ev)
	})
}

func checkConsistent(t *testing.T, ev *forges.Event) {
	t.Helper()
	if ev.Type == forges.EventIgnored {
		if ev.Reason == "" {
			t.Fatal("ignored without a reason")
		}
		return
	}
	tg := ev.Target
	if tg.Project.Owner == "" || tg.Project.Name == "" || tg.Project.Forge != "" {
		t.Fatalf("%s: project %+v", ev.Type, tg.Project)
	}
	switch ev.Type {
	case forges.EventPush, forges.EventBranchDeleted:
		if ev.Branch == "" || tg.Kind != "" || tg.Number != 0 {
			t.Fatalf("%s: branch %q target %+v", ev.Type, ev.Branch, tg)
		}
	case forges.EventCIStatusChanged:
		if ev.SHA == "" || ev.CI == nil {
			t.Fatalf("%s: sha %q ci %v", ev.Type, ev.SHA, ev.CI)
		}
		if (tg.Kind == "") != (tg.Number == 0) || (tg.Kind != "" && tg.Kind != forges.TargetMergeRequest) {
			t.Fatalf("%s: target %+v", ev.Type, tg)
		}
	default:
		if tg.Number <= 0 || (tg.Kind != forges.TargetIssue && tg.Kind != forges.TargetMergeRequest) {
			t.Fatalf("%s: target %+v", ev.Type, tg)
		}
		if ev.Issue != nil && ev.Issue.Number != tg.Number {
			t.Fatalf("%s: issue %d, target %d", ev.Type, ev.Issue.Number, tg.Number)
		}
		if ev.MergeRequest != nil && (ev.MergeRequest.Number != tg.Number || tg.Kind != forges.TargetMergeRequest) {
			t.Fatalf("%s: merge request %d, target %+v", ev.Type, ev.MergeRequest.Number, tg)
		}
	}
	switch ev.Type {
	case forges.EventCommentCreated, forges.EventCommentEdited:
		if ev.Comment == nil || ev.Comment.ID == 0 {
			t.Fatalf("%s without a comment", ev.Type)
		}
	case forges.EventReviewSubmitted:
		if ev.Review == nil || ev.Review.ID == 0 || tg.Kind != forges.TargetMergeRequest {
			t.Fatalf("%s: review %+v target %+v", ev.Type, ev.Review, tg)
		}
	case forges.EventIssueLabeled, forges.EventIssueUnlabeled:
		if !ev.LabelDeltaKnown || len(ev.LabelsAdded)+len(ev.LabelsRemoved) != 1 {
			t.Fatalf("%s: delta %v %v known %v", ev.Type, ev.LabelsAdded, ev.LabelsRemoved, ev.LabelDeltaKnown)
		}
	case forges.EventIssueAssigned, forges.EventIssueUnassigned:
		if ev.Assignee == "" {
			t.Fatalf("%s without an assignee", ev.Type)
		}
	case forges.EventMergeRequestOpened, forges.EventMergeRequestUpdated, forges.EventMergeRequestMerged, forges.EventMergeRequestClosed:
		if ev.MergeRequest == nil {
			t.Fatalf("%s without a merge request", ev.Type)
		}
	}
}

// TestSeedsConsistent runs the fuzz invariant over the unmutated seeds.
func TestSeedsConsistent(t *testing.T) {
	for _, s := range seeds(t) {
		ev, err := Hooks{}.Parse(headers(s.event, "d"), s.body)
		if err != nil {
			t.Errorf("%s: %v", s.event, err)
			continue
		}
		checkConsistent(t, ev)
	}
}
