package mirror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/alchemic-studio/alfred/state"
)

// branch is the state branch, the same name on both sides.
const branch = string(state.RefName)

// ErrRemoteAhead is wrapped by the error of Prepare (and of a push) when
// the remote branch holds commits the local branch lacks.
var ErrRemoteAhead = errors.New("the state remote has commits the local branch lacks")

// Start is what Prepare found.
type Start struct {
	Restored  bool          // the state directory was restored from the remote
	RemoteTip string        // the remote branch's commit ("" when it has none)
	Known     bool          // RemoteTip is known (the remote answered)
	Took      time.Duration // the whole of Prepare, restore included
}

// Prepare makes the state directory dir agree with the remote before the
// store opens it. A directory without the branch (missing, empty or fresh)
// is restored from the remote when the remote has it; a directory whose
// branch lacks commits of the remote is refused with ErrRemoteAhead and how
// to resolve it. An unreachable remote fails Prepare only when dir has
// nothing: with a local branch the mirror catches up once it answers.
func Prepare(ctx context.Context, dir string, r Remote, log *slog.Logger) (Start, error) {
	t0 := time.Now()
	local, err := localTip(ctx, dir)
	if err != nil {
		return Start{}, err
	}
	remote, err := remoteTip(ctx, r)
	if err != nil {
		if local == "" {
			return Start{}, fmt.Errorf("state directory %s is empty and the state remote cannot say whether it holds a state to restore: %w", dir, err)
		}
		log.Warn("state remote unreachable at start; the mirror will catch up once it answers", "remote", r.URL, "err", err)
		return Start{Took: time.Since(t0)}, nil
	}
	st := Start{RemoteTip: remote, Known: true}
	switch {
	case local == "" && remote != "":
		if err := restore(ctx, dir, r); err != nil {
			return Start{}, err
		}
		st.Restored = true
		recordPushed(dir, r, remote)
		log.Info("state restored from the state remote", "remote", r.URL, "commit", remote, "took", time.Since(t0).Round(time.Millisecond))
	case local != "":
		if err := owns(ctx, dir, r, local, remote); err != nil {
			return Start{}, err
		}
	}
	st.Took = time.Since(t0)
	return st, nil
}

// owns checks that the remote tip is one this directory knows: none, the
// local tip or one of its ancestors, or the last tip this directory pushed
// there (its history rewritten since). Otherwise it says how to resolve it.
func owns(ctx context.Context, dir string, r Remote, local, remote string) error {
	if remote == "" || remote == local || remote == lastPushed(dir, r) {
		return nil
	}
	if _, err := git(ctx, Remote{}, dir, nil, "merge-base", "--is-ancestor", remote, local); err == nil {
		return nil
	}
	return fmt.Errorf("%w: remote %s is at %s, which the local branch %s (at %s) does not contain: another process wrote there, "+
		"or this directory is older than the remote. Only one Alfred may write to a state remote. "+
		"To keep the remote's state: stop Alfred, move %s aside and start again (the state is restored from the remote). "+
		"To keep this directory's state instead: git --git-dir %s push --force %s %s (the remote's own commits are lost)",
		ErrRemoteAhead, r.URL, short(remote), branch, short(local), dir, dir, r.URL, branch)
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// localTip is the commit of the local branch, "" when dir has no repository
// or no branch.
func localTip(ctx context.Context, dir string) (string, error) {
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	out, err := git(ctx, Remote{}, dir, nil, "for-each-ref", "--format=%(objectname)", branch)
	if err != nil {
		return "", fmt.Errorf("read the state branch of %s: %w", dir, err)
	}
	return strings.TrimSpace(out), nil
}

// remoteTip asks the remote where its branch is ("" when it has none).
func remoteTip(ctx context.Context, r Remote) (string, error) {
	out, err := git(ctx, r, "", r.config(), "ls-remote", "--refs", r.URL, branch)
	if err != nil {
		return "", fmt.Errorf("ask state remote %s: %w", r.URL, explain(err, ""))
	}
	for _, line := range strings.Split(out, "\n") {
		if h, ref, ok := strings.Cut(strings.TrimSpace(line), "\t"); ok && ref == branch {
			return h, nil
		}
	}
	return "", nil
}

// restore fetches the remote branch into dir, made a bare repository when
// it is not one. The objects arrive in one pack and the branch is set last,
// so an interrupted restore leaves no branch and is done again. The pack is
// then written again without deltas, which the store reads fastest.
func restore(ctx context.Context, dir string, r Remote) error {
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("restore state: %w", err)
		}
		if _, err := git(ctx, Remote{}, "", nil, "init", "--quiet", "--bare", "--initial-branch="+strings.TrimPrefix(branch, "refs/heads/"), dir); err != nil {
			return fmt.Errorf("restore state: %w", err)
		}
	}
	cfg := append(r.config(), "fetch.unpackLimit=1", "transfer.unpackLimit=1")
	if _, err := git(ctx, r, dir, cfg, "fetch", "--quiet", "--no-tags", "--update-head-ok", r.URL, "+"+branch+":"+branch); err != nil {
		return fmt.Errorf("restore state from %s: %w", r.URL, err)
	}
	repack := []string{"repack.writeBitmaps=false", "pack.writeReverseIndex=false", "core.fsync=all", "core.fsyncMethod=fsync"}
	if _, err := git(ctx, Remote{}, dir, repack, "repack", "-a", "-d", "-f", "-q", "--window=0", "--depth=0"); err != nil {
		return fmt.Errorf("restore state: repack: %w", err)
	}
	return nil
}

// pushedFile records, per state directory, the last tip pushed to a remote.
const pushedFile = "alfred-mirror.json"

type pushed struct {
	Remote string `json:"remote"`
	Tip    string `json:"tip"`
}

// lastPushed is the tip this directory last pushed to r ("" if none).
func lastPushed(dir string, r Remote) string {
	raw, err := os.ReadFile(filepath.Join(dir, pushedFile))
	if err != nil {
		return ""
	}
	var p pushed
	if json.Unmarshal(raw, &p) != nil || p.Remote != r.URL {
		return ""
	}
	return p.Tip
}

// recordPushed notes tip as pushed to r. It is a hint (see owns): a failure
// to write it is not one of the push.
func recordPushed(dir string, r Remote, tip string) error {
	raw, _ := json.Marshal(pushed{Remote: r.URL, Tip: tip})
	tmp := filepath.Join(dir, "."+pushedFile+".tmp")
	if err := os.WriteFile(tmp, append(raw, '\n'), 0o644); err != nil {
		return fmt.Errorf("record the pushed tip: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, pushedFile)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("record the pushed tip: %w", err)
	}
	return nil
}
