package forgejotest

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/alchemic-studio/alfred/forges/internal/fakeforge"
)

// Webhooks. After SetWebhook, the server delivers what Forgejo 7 would: for
// changes made through its API (by the bot) and for the people's actions of
// the Act* methods. Deliveries go out one at a time, in order, from a
// goroutine, signed like Forgejo: X-Forgejo-Signature (hex HMAC-SHA256 of the
// pretty-printed body) repeated as X-Gitea-, X-Gogs- and X-Hub-Signature-256,
// and the event, event type and delivery id under the same four prefixes.
// No webhook is sent for commit statuses, as in Forgejo 7.

type hookTarget struct {
	url, secret string
	client      *http.Client
}

// Delivery is one webhook the server sent.
type Delivery struct {
	ID, Event, EventType, Action string
	Status                       int // HTTP status answered, 0 on a transport error
	Err                          error
}

type outgoing = fakeforge.Pending[Delivery]

// SetWebhook makes the server deliver webhooks to url signed with secret.
func (s *Server) SetWebhook(url, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook = &hookTarget{url: url, secret: secret, client: &http.Client{Timeout: 10 * time.Second}}
}

// Deliveries lists the webhooks sent so far, in order.
func (s *Server) Deliveries() []Delivery { return s.hq.Deliveries() }

// Flush waits until every queued webhook has been delivered.
func (s *Server) Flush() { s.hq.Flush() }

// enqueue queues a delivery; it is called with s.mu held. It returns nil when
// no webhook is configured.
func (s *Server) enqueue(event, eventType string, payload map[string]any) *outgoing {
	if s.hook == nil {
		return nil
	}
	body, err := json.MarshalIndent(payload, "", "  ")
	if err != nil {
		panic(err)
	}
	action, _ := payload["action"].(string)
	target := *s.hook
	return s.hq.Queue(Delivery{ID: fakeforge.NewUUID(), Event: event, EventType: eventType, Action: action}, func(d Delivery) Delivery {
		d.Status, d.Err = send(target, d, body)
		return d
	})
}

func send(target hookTarget, d Delivery, body []byte) (int, error) {
	mac := hmac.New(sha256.New, []byte(target.secret))
	mac.Write(body)
	sig := hex.EncodeToString(mac.Sum(nil))
	mac1 := hmac.New(sha1.New, []byte(target.secret))
	mac1.Write(body)
	h := http.Header{}
	for _, p := range []string{"X-Forgejo-", "X-Gitea-", "X-Gogs-", "X-GitHub-"} {
		h.Set(p+"Delivery", d.ID)
		h.Set(p+"Event", d.Event)
		h.Set(p+"Event-Type", d.EventType)
		if p != "X-GitHub-" {
			h.Set(p+"Signature", sig)
		}
	}
	h.Set("X-Hub-Signature-256", "sha256="+sig)
	h.Set("X-Hub-Signature", "sha1="+hex.EncodeToString(mac1.Sum(nil)))
	return fakeforge.Post(target.client, target.url, h, body)
}

// hookObject returns a fresh copy of a recorded webhook body.
func hookObject(file string) map[string]any {
	return fakeforge.Recorded(recordings, "forgejotest", file)
}

// The payload builders below are called with s.mu held.

func (s *Server) issuePayload(is *issue, action, sender string, changes map[string]any) map[string]any {
	o := hookObject("hook-issues-opened.json")
	o["action"] = action
	o["number"] = is.number
	o["issue"] = s.issueJSON(is)
	o["sender"] = s.userJSON(sender)
	o["repository"] = s.repoJSON()
	o["commit_id"] = ""
	if changes != nil {
		o["changes"] = changes
	}
	return o
}

func (s *Server) pullPayload(is *issue, action, sender string, changes map[string]any) map[string]any {
	o := hookObject("hook-pull_request-opened.json")
	o["action"] = action
	o["number"] = is.number
	o["pull_request"] = s.pullJSON(is)
	o["sender"] = s.userJSON(sender)
	o["repository"] = s.repoJSON()
	o["requested_reviewer"], o["review"], o["commit_id"] = nil, nil, ""
	if changes != nil {
		o["changes"] = changes
	}
	return o
}

func (s *Server) commentPayload(c *comment, action string, changes map[string]any) map[string]any {
	is := s.issues[c.issue]
	o := hookObject("hook-issue_comment-created.json")
	o["action"] = action
	o["issue"] = s.issueJSON(is)
	o["comment"] = s.commentJSON(c)
	o["sender"] = s.userJSON(c.author)
	o["repository"] = s.repoJSON()
	o["is_pull"] = is.pull != nil
	if changes != nil {
		o["changes"] = changes
	}
	return o
}

// hookIssueEvent sends an issue-family event, or its pull request twin.
func (s *Server) hookIssueEvent(is *issue, typ, action, sender string, changes map[string]any) *outgoing {
	if is.pull != nil {
		prType := map[string]string{"issues": "pull_request", "issue_assign": "pull_request_assign", "issue_label": "pull_request_label"}[typ]
		return s.enqueue("pull_request", prType, s.pullPayload(is, action, sender, changes))
	}
	return s.enqueue("issues", typ, s.issuePayload(is, action, sender, changes))
}

func (s *Server) hookComment(c *comment, action string, changes map[string]any) *outgoing {
	typ := "issue_comment"
	if s.issues[c.issue].pull != nil {
		typ = "pull_request_comment"
	}
	return s.enqueue("issue_comment", typ, s.commentPayload(c, action, changes))
}

func (s *Server) hookPush(branch, before, after, sender string) *outgoing {
	o := hookObject("hook-push.json")
	o["ref"] = "refs/heads/" + branch
	o["before"], o["after"] = before, after
	o["compare_url"] = fmt.Sprintf("%s/%s/%s/compare/%s...%s", s.srv.URL, Owner, Repo, before, after)
	o["commits"], o["total_commits"] = []any{}, 0
	if hc, ok := o["head_commit"].(map[string]any); ok {
		hc["id"] = after
		hc["url"] = fmt.Sprintf("%s/%s/%s/commit/%s", s.srv.URL, Owner, Repo, after)
	}
	o["repository"] = s.repoJSON()
	o["pusher"], o["sender"] = s.userJSON(sender), s.userJSON(sender)
	return s.enqueue("push", "push", o)
}

func (s *Server) hookDelete(branch, sender string) *outgoing {
	o := hookObject("hook-delete.json")
	o["ref"] = "refs/heads/" + branch
	o["repository"] = s.repoJSON()
	o["sender"] = s.userJSON(sender)
	return s.enqueue("delete", "delete", o)
}

func (s *Server) hookReview(is *issue, author, state, body string) *outgoing {
	typ := map[string]string{"APPROVED": "pull_request_review_approved", "REQUEST_CHANGES": "pull_request_review_rejected", "COMMENT": "pull_request_review_comment"}[state]
	if typ == "" {
		return nil
	}
	event := map[string]string{"pull_request_review_approved": "pull_request_approved", "pull_request_review_rejected": "pull_request_rejected", "pull_request_review_comment": "pull_request_comment"}[typ]
	o := s.pullPayload(is, "reviewed", author, nil)
	o["review"] = map[string]any{"type": typ, "content": body}
	return s.enqueue(event, typ, o)
}
