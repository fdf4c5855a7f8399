package e2e

import (
	"net"
	"testing"
)

// TestServeMovesOffATakenPort: the harness's first start of the built bot
// finds its port taken (as a parallel test may take it between freeAddr
// and the bot's bind), moves to another and gets ready there; a port taken
// at a later start is not moved off (the forge's webhooks name it).
func TestServeMovesOffATakenPort(t *testing.T) {
	dockerHost, image, instance := shippedImage(t)
	b := newBot(t, newFakeWorld(t).forgeEnv(), dockerHost, image, instance)
	taken := b.addr
	ln, err := net.Listen("tcp", taken)
	if err != nil {
		t.Fatalf("take %s: %v", taken, err)
	}
	defer ln.Close()
	b.serve()
	if b.addr == taken || !b.served {
		t.Fatalf("the bot stayed on the taken %s (served %v)", taken, b.served)
	}
	for _, kv := range b.env {
		if kv == "ALFRED_LISTEN="+taken || kv == "ALFRED_PUBLIC_URL=http://"+taken {
			t.Errorf("the environment still names the taken port: %s", kv)
		}
	}
}
