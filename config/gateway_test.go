package config

import (
	"io"
	"strings"
	"testing"
)

// TestGatewaySettings: ALFRED_GATEWAY is off by default, on needs the image
// runner, and the forwarder is an absolute path or nothing.
func TestGatewaySettings(t *testing.T) {
	c, err := Load("serve", nil, env(nil), io.Discard)
	if err != nil || c.Gateway || c.GatewayForwarder != "" {
		t.Fatalf("defaults: %v %v %q", err, c.Gateway, c.GatewayForwarder)
	}
	c, err = Load("serve", nil, env(map[string]string{"ALFRED_GATEWAY": "on", "ALFRED_GATEWAY_FORWARDER": "/opt/alfred-forward"}), io.Discard)
	if err != nil || !c.Gateway || c.GatewayForwarder != "/opt/alfred-forward" {
		t.Fatalf("on: %v %+v", err, c)
	}
	for _, bad := range []map[string]string{
		{"ALFRED_GATEWAY": "yes"},
		{"ALFRED_GATEWAY": "on", "ALFRED_RUNNER": "host"},
		{"ALFRED_GATEWAY_FORWARDER": "bin/alfred-forward"},
	} {
		if _, err := Load("serve", nil, env(bad), io.Discard); err == nil || !strings.Contains(err.Error(), "ALFRED_GATEWAY") {
			t.Errorf("%v: %v", bad, err)
		}
	}
}
