package e2e

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents/mockllm"
	"github.com/alchemic-studio/alfred/state"
)

// TestE2EDeployed is the deployment proof: the scenario of TestE2E from
// assignment to the pull request, played by the shipped images that
// scripts/images.sh built instead of the test's own image and the binary on
// the host. The bot runs in a container of the bot image as a deployment runs
// it (deploy/compose.yaml): non-root, the daemon's socket mounted with its
// group, the data folder at the same path inside as on the host. The agents
// run in the agent image with its real Claude Code on Debian's Node.js.
//
// The mock model runs in this test, on the host's loopback, which the bot's
// container shares: it is the upstream of the bot's model gateway, and the
// agent containers, sealed as by default (no network, the key held by the
// gateway), reach it only through the socket the gateway shares from the
// data folder, mounted at the same path on both sides as in the compose file.
func TestE2EDeployed(t *testing.T) {
	started := time.Now()
	d := dockerCLI{Host: need(t, "ALFRED_TEST_DOCKER_HOST", "the private Docker daemon of scripts/dockerd.sh")}
	botImage := need(t, "ALFRED_TEST_BOT_IMAGE", "the bot image scripts/images.sh builds")
	agentImg := need(t, "ALFRED_TEST_AGENT_IMAGE", "the agent image scripts/images.sh builds")
	if _, err := exec.LookPath("docker"); err != nil {
		t.Fatalf("the docker CLI is missing (Debian's docker.io, which scripts/dockerd.sh installs): %v", err)
	}
	for _, image := range []string{botImage, agentImg} {
		if _, err := d.Run("image", "inspect", "--format", "{{.Id}}", image); err != nil {
			t.Fatalf("%s is not in the private daemon; run scripts/images.sh: %v", image, err)
		}
	}
	instance := "e2e-deployed-" + randomSuffix(t)

	w := newFakeWorld(t)
	model := mockllm.Start(mockllm.Options{Reply: agentReply, WriteDir: "/workspace", ReadOnlyPhrase: "Do not change any file"})
	t.Cleanup(model.Close)
	b := newBotContainer(t, d, botImage, instance, append([]string{
		"ALFRED_LOG_FORMAT=json", "ALFRED_WEBHOOK_SECRETS=s3cret", "ALFRED_PUBLIC_PROJECTS=*",
		"ALFRED_RUNNER=image", "ALFRED_AGENT_IMAGE=" + agentImg, "ALFRED_POLL_INTERVAL=300ms",
		"ALFRED_AGENT_ENV=ANTHROPIC_BASE_URL,ANTHROPIC_API_KEY",
		"ANTHROPIC_BASE_URL=" + model.URL, "ANTHROPIC_API_KEY=" + apiKey,
	}, w.forgeEnv()...)) // the fake listens on the host's loopback, which the container shares

	owner, name, _ := strings.Cut(w.project(), "/")
	s := &scenario{t: t, w: w, b: b.view(), docker: d.Host, instance: instance, owner: owner, name: name}
	if out := b.run("labels", "sync", "-project", w.project()); !strings.Contains(out, "19 labels created") {
		t.Fatalf("labels sync: %s", out)
	}
	b.serve()
	w.hook("http://"+b.addr+"/webhooks/forgejo", "s3cret")

	// The container is the image's non-root user, healthy by the image's check.
	if user := b.inspect("{{.Config.User}}"); user != fmt.Sprintf("%d:%d", deployUID, deployGID) {
		t.Errorf("the bot's container runs as %q; want %d:%d", user, deployUID, deployGID)
	}
	if uid := strings.TrimSpace(d.Must(t, "exec", b.name, "id", "-u")); uid != fmt.Sprint(deployUID) {
		t.Errorf("id -u in the bot's container = %s; want %d", uid, deployUID)
	}
	b.waitHealthy()

	// Detection runs each CLI's version command in the agent image at start
	// (minutes on a machine loaded by parallel test packages).
	var version string
	waitFor(t, 4*time.Minute, "claude-code detected as resumable in "+agentImg, func() (ok bool) {
		s.b.look(func(st *state.Store) {
			all, _ := st.Installations()
			for _, in := range all {
				if in.AdapterID == "claude-code" && in.Image == agentImg && in.ResumableSessions {
					ok, version = true, in.Version
				}
			}
		})
		return ok
	})
	t.Logf("Claude Code %s detected in %s", version, agentImg)

	s.playDeployed(model, version)
	s.b.model = model
	s.sealed()

	// Stopped as docker stop does, the bot leaves no agent container behind.
	b.stop()
	waitFor(t, 30*time.Second, "no container of instance "+instance+" left", func() bool {
		ids, err := d.Labelled("alfred.instance=" + instance)
		return err == nil && len(ids) == 0
	})
	t.Logf("deployed e2e wall time %s; webhook to the agent being started %s", time.Since(started).Round(time.Millisecond), s.webhookToAgent.Round(time.Millisecond))
}

// playDeployed works the issue from assignment to the pull request, then
// checks the model saw the resume and the pages show the session.
func (s *scenario) playDeployed(model *mockllm.Server, version string) {
	s.toPullRequest()
	s.modelSawResume(model, version)
	s.pages()
}

// modelSawResume checks the agent image's Claude Code, at the version
// detected, talked to the mock, and that the development run, resumed, sent
// the analysis' conversation along: a request carries both prompts.
func (s *scenario) modelSawResume(model *mockllm.Server, version string) {
	t := s.t
	reqs := model.Requests()
	if len(reqs) == 0 {
		t.Fatalf("the mock model got no request (unhandled: %v)", model.Unhandled())
	}
	for _, r := range reqs {
		if ua := r.Header.Get("User-Agent"); !strings.HasPrefix(ua, "claude-cli/"+version+" ") {
			t.Errorf("a model request came from %q; want the agent image's Claude Code (claude-cli/%s)", ua, version)
		}
	}
	most := 0
	for _, r := range reqs {
		if r.API == mockllm.APIAnthropic {
			most = max(most, r.Prompts)
		}
	}
	if most < 2 {
		t.Errorf("no model request carried the analysis' prompt and the development's: at most %d prompts in %d requests", most, len(reqs))
	}
}
