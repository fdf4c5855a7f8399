package e2e

import (
	"encoding/json"
	"flag"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/alchemic-studio/alfred/internal/browsertest"
	"github.com/alchemic-studio/alfred/outcomes"
)

var outcomesShot = flag.Bool("outcomes-shot", false, "write the outcomes page of the handoff e2e to docs/outcomes-e2e.png")

// outcomesSeen (issue 33, item 2, through the built binary): the running
// bot's /api/outcomes says of the project what the derived outcome o says
// (one issue finished, merged: a merge rate of 1 of 1, marked few, the
// time to merge the outcome's), and Chromium draws /outcomes with the
// project's merge-rate chart saying "100% (1 of 1, few)". With
// -outcomes-shot the page is kept as docs/outcomes-e2e.png.
func (s *scenario) outcomesSeen(o outcomes.Outcome) {
	t := s.t
	t.Helper()
	project := s.owner + "/" + s.name
	q := "project=" + url.QueryEscape(project)
	resp, err := http.Get("http://" + s.b.addr + "/api/outcomes?" + q)
	if err != nil {
		t.Fatalf("GET /api/outcomes: %v", err)
	}
	defer resp.Body.Close()
	var got struct {
		Projects []struct {
			Project string           `json:"project"`
			Summary outcomes.Summary `json:"summary"`
		} `json:"projects"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/api/outcomes: %s, %v", resp.Status, err)
	}
	if len(got.Projects) != 1 || got.Projects[0].Project != project {
		t.Fatalf("/api/outcomes?%s gave %+v, want the project %s alone", q, got.Projects, project)
	}
	sum := got.Projects[0].Summary
	if r := sum.MergeRate; sum.Issues < 1 || sum.Finished != 1 || r == nil || r.Count != 1 || r.Of != 1 || !r.Few {
		t.Errorf("/api/outcomes says issues %d, finished %d, merge rate %+v; want one finished, merged: 1 of 1, few", sum.Issues, sum.Finished, r)
	}
	if m := sum.ToMerge; m == nil || m.N != 1 || m.Median != *o.Finished.After {
		t.Errorf("/api/outcomes' time to merge %+v; the derived outcome's is %s", m, *o.Finished.After)
	}

	ctx := browsertest.Start(t, 2*time.Minute)
	chart := `[data-test="outcome-chart-merge-rate"] svg`
	js := `Array.from(document.querySelectorAll('` + chart + ` text')).map(e => e.textContent).join("|")`
	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+s.b.addr+"/outcomes?"+q),
		chromedp.WaitVisible(chromedp.CSS(`[data-test="overall"] `+chart))); err != nil {
		t.Fatalf("the outcomes page in Chromium: %v", err)
	}
	texts, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
	if err != nil {
		t.Fatalf("read the merge-rate chart: %v", err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot of the outcomes page: %v", err)
	}
	if !strings.Contains(texts, "100% (1 of 1, few)") {
		t.Errorf("the merge-rate chart says %q, want 100%% (1 of 1, few)", texts)
	}
	if *outcomesShot {
		if err := os.WriteFile("../docs/outcomes-e2e.png", png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
