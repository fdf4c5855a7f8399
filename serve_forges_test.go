package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/forges/forgejo/forgejotest"
	"github.com/alchemic-studio/alfred/forges/gitlab/gitlabtest"
)

// TestServeTwoForges: one process, a Forgejo (the variables) and a GitLab
// (a [forge gl] section of the file): each has its route, parser and
// secrets, its labels synced by name, and the home page lists both.
func TestServeTwoForges(t *testing.T) {
	fj, gl := forgejotest.NewServer(t), gitlabtest.NewServer(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "alfred.env")
	conf := "[forge gl]\nALFRED_FORGE=gitlab\nALFRED_FORGE_URL=" + gl.URL() + "\nALFRED_FORGE_TOKEN=${GL_TOKEN}\nALFRED_WEBHOOK_SECRETS=gl-secret\n"
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"ALFRED_CONFIG": file, "GL_TOKEN": gl.Token(), "ALFRED_STATE_DIR": filepath.Join(dir, "state.git"), "ALFRED_DATA_DIR": dir,
		"ALFRED_FORGE": "forgejo", "ALFRED_FORGE_URL": fj.URL(), "ALFRED_FORGE_TOKEN": forgejotest.BotToken, "ALFRED_WEBHOOK_SECRETS": "fj-secret",
		"ALFRED_RUNNER": "host",
	}
	glProject := "gl:" + gl.Project().FullName()
	if code, out, errOut := alfred(t, env, "labels", "sync", "-project", glProject); code != 0 || !strings.Contains(out, "19 labels created") || len(gl.Labels()) != 19 {
		t.Fatalf("labels sync on the GitLab: %d %q %q (%d labels there)", code, out, errOut, len(gl.Labels()))
	}
	if code, _, errOut := alfred(t, env, "labels", "sync", "-project", "alice/demo"); code != 2 || !strings.Contains(errOut, "several forges are configured (forgejo, gl)") {
		t.Fatalf("a project without its forge: %d %q", code, errOut)
	}

	srv := serveAlfred(t, buildBinary(t), env)
	addr := srv.addr

	fjBody := recordedCreate(t)
	glBody, _ := os.ReadFile("testdata/gitlab/webhooks/build.json")
	signed := func(secret string) map[string]string { return forgejoSigned(fjBody, secret) }
	for _, tc := range []struct {
		path   string
		body   []byte
		header map[string]string
		want   int
	}{
		{"/webhooks/forgejo", fjBody, signed("fj-secret"), http.StatusOK},
		{"/webhooks/forgejo", fjBody, signed("gl-secret"), http.StatusUnauthorized},
		{"/webhooks/gl", glBody, map[string]string{"X-Gitlab-Event": "Job Hook", "X-Gitlab-Token": "gl-secret"}, http.StatusOK},
		{"/webhooks/gl", glBody, map[string]string{"X-Gitlab-Event": "Job Hook", "X-Gitlab-Token": "fj-secret"}, http.StatusUnauthorized},
		{"/webhooks/gitlab", glBody, map[string]string{"X-Gitlab-Event": "Job Hook", "X-Gitlab-Token": "gl-secret"}, http.StatusNotFound},
	} {
		if got := post(t, addr, tc.path, tc.body, tc.header); got != tc.want {
			t.Errorf("POST %s (%v): %d, want %d", tc.path, tc.header, got, tc.want)
		}
	}
	// Each forge's refusal is said on /readyz, with what to check.
	_, health := srv.get("/readyz")
	for _, forge := range []string{"forgejo", "gl"} {
		if want := "forge " + forge + ": 1 webhook deliveries refused since"; !strings.Contains(health, want) ||
			!strings.Contains(health, "ALFRED_WEBHOOK_SECRETS") {
			t.Errorf("/readyz lacks %q:\n%s", want, health)
		}
	}
	if strings.Contains(health, "gl-secret") || strings.Contains(health, "fj-secret") {
		t.Errorf("/readyz shows a secret:\n%s", health)
	}
	_, page := srv.get("/config")
	for _, want := range []string{"/webhooks/forgejo", "/webhooks/gl", "Forge gl (gitlab at " + gl.URL()} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the configuration page lacks %q", want)
		}
	}
	if strings.Contains(string(page), gl.Token()) || strings.Contains(string(page), "gl-secret") {
		t.Error("the configuration page shows a secret of the GitLab forge")
	}
}

// TestServeFirstStart: a first start as a new user makes it, under a
// supervisor: its data and state folders do not exist yet and its forge
// does not answer (nothing listens at its address). The bot makes its
// folders (0700), serves, says on /readyz which forge is unreachable and
// since when (ready all the same: its webhooks are accepted and journaled),
// and the metrics say it too.
func TestServeFirstStart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	down := freePort(t) // closed again: connection refused
	env := map[string]string{
		"ALFRED_STATE_DIR": filepath.Join(dir, "state.git"), "ALFRED_DATA_DIR": filepath.Join(dir, "data"),
		"ALFRED_FORGE": "forgejo", "ALFRED_FORGE_URL": "http://" + down, "ALFRED_FORGE_TOKEN": forgejotest.BotToken,
		"ALFRED_WEBHOOK_SECRETS": "fj-secret", "ALFRED_RUNNER": "host",
	}
	srv := serveAlfred(t, buildBinary(t), env)
	for _, d := range []string{env["ALFRED_DATA_DIR"], env["ALFRED_STATE_DIR"]} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("folder %s: %v %v; want made, 0700", d, fi, err)
		}
	}
	if code, body := srv.get("/readyz"); code != http.StatusOK || !strings.Contains(body, "forge forgejo unreachable since") ||
		!strings.Contains(body, "connection refused") {
		t.Errorf("/readyz: %d %q; want ready, saying the forge is unreachable", code, body)
	}
	if _, body := srv.get("/metrics"); !strings.Contains(body, `alfred_forge_up{forge="forgejo"} 0`) {
		t.Errorf("the metrics do not say the forge is down:\n%s", body)
	}
	body := recordedCreate(t)
	if code := post(t, srv.addr, "/webhooks/forgejo", body, forgejoSigned(body, "fj-secret")); code != http.StatusOK {
		t.Errorf("a webhook while the forge is down: %d, want accepted", code)
	}
}

// recordedCreate is a create delivery Forgejo 7 sent (the corpus).
func recordedCreate(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/forgejo/forgejo-7.0.16/create.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// forgejoSigned are the headers of a Forgejo delivery of body signed with secret.
func forgejoSigned(body []byte, secret string) map[string]string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return map[string]string{"X-Forgejo-Event": "create", "X-Forgejo-Delivery": "d-1", "X-Forgejo-Signature": hex.EncodeToString(m.Sum(nil))}
}

// post POSTs body with header to path of the bot at addr and answers the status.
func post(t *testing.T, addr, path string, body []byte, header map[string]string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
