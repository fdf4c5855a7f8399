package forgejo_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgejo"
	"github.com/alchemic-studio/alfred/forges/forgejo/forgejotest"
)

// TestFakeWebhooksRoundTrip checks that the fake's signed webhooks, built from
// recorded payloads, verify and parse into the expected events, both for
// people's actions and for changes the bot makes through the API.
func TestFakeWebhooksRoundTrip(t *testing.T) {
	var mu sync.Mutex
	var events []*forges.Event
	sink := func(_ context.Context, ev *forges.Event) error {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, ev)
		return nil
	}
	hook := httptest.NewServer(forges.NewWebhookHandler("fj", forgejo.Hooks{}, []string{"s3cret"}, sink, slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer hook.Close()
	srv := forgejotest.NewServer(t)
	srv.SetWebhook(hook.URL+"/webhooks/fj", "s3cret")
	f, err := forgejo.New(forgejo.Options{BaseURL: srv.URL(), Token: forgejotest.BotToken})
	if err != nil {
		t.Fatal(err)
	}
	p := forges.Project{Forge: "fj", Owner: forgejotest.Owner, Name: forgejotest.Repo}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	check := func(d forgejotest.Delivery, err error) {
		t.Helper()
		if err != nil || d.Status != 202 && d.Status != 200 {
			t.Fatalf("delivery %+v, %v", d, err)
		}
	}
	check(srv.ActOpenIssue(forges.Issue{Number: 1, Title: "Add a name", Body: "text", Author: "alice"}), nil)
	check(srv.ActAssign(1, "bot", "alice"))
	check(srv.ActLabel(1, "alice", []string{"type::task"}, nil))
	check(srv.ActComment(1, "alice", "please"))
	if _, err := f.CreateComment(ctx, forges.Target{Project: p, Kind: forges.TargetIssue, Number: 1}, "ack"); err != nil {
		t.Fatal(err)
	}
	for _, d := range srv.ActPush("agent/issue-1-add-a-name", "57270c4a21aac4b0f6a5aa05cc714b4f4c961e94", "bot") {
		check(d, nil)
	}
	mr, err := f.CreateMergeRequest(ctx, p, forges.NewMergeRequest{Title: "Add a name", Body: "Closes #1", SourceBranch: "agent/issue-1-add-a-name", TargetBranch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range srv.ActPush("agent/issue-1-add-a-name", "77112694299eb91718af641dd13446ad75c6d5e6", "bot") {
		check(d, nil)
	}
	check(srv.ActReview(mr.Number, "alice", "REQUEST_CHANGES", "validate the name", forges.ReviewComment{Path: "a.go", Line: 3, Body: "here"}))
	check(srv.ActMerge(mr.Number, "alice"))
	check(srv.ActDeleteBranch("agent/issue-1-add-a-name", "alice"), nil)
	srv.Flush()

	want := []forges.EventType{
		forges.EventIssueOpened, forges.EventIssueAssigned, forges.EventIssueLabeled, forges.EventCommentCreated,
		forges.EventCommentCreated, // the bot's own comment, sender bot
		forges.EventPush, forges.EventMergeRequestOpened, forges.EventPush, forges.EventMergeRequestUpdated,
		forges.EventReviewSubmitted, forges.EventMergeRequestMerged, forges.EventPush, forges.EventBranchDeleted,
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != len(want) {
		for _, ev := range events {
			t.Logf("got %s", ev.Type)
		}
		t.Fatalf("got %d events, want %d", len(events), len(want))
	}
	for i, ev := range events {
		if ev.Type != want[i] {
			t.Errorf("event %d = %s, want %s", i, ev.Type, want[i])
		}
		if ev.DeliveryID == "" || ev.Target.Project != p {
			t.Errorf("event %d: delivery %q, project %+v", i, ev.DeliveryID, ev.Target.Project)
		}
	}
	if events[1].Assignee != "bot" || events[2].Issue == nil || len(events[2].Labels) != 1 {
		t.Errorf("assign/label events = %+v / %+v", events[1], events[2])
	}
	if events[4].Actor != "bot" {
		t.Errorf("the bot's own comment has actor %q, want bot", events[4].Actor)
	}
	if events[8].SHA != "77112694299eb91718af641dd13446ad75c6d5e6" || events[9].Review.State != "changes_requested" {
		t.Errorf("sync SHA %q, review %+v", events[8].SHA, events[9].Review)
	}
	rc, err := f.ReviewComments(ctx, p, mr.Number, time.Time{})
	if err != nil || len(rc) != 2 {
		t.Errorf("ReviewComments after the review = %+v, %v; want the body and the inline comment", rc, err)
	}
}
