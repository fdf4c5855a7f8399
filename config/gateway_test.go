package config

import (
	"io"
	"strings"
	"testing"
)

// TestGatewaySettings: ALFRED_GATEWAY is on by default with the image runner
// and off with the host runner, on needs the image runner, off turns it off,
// and the forwarder is an absolute path or nothing.
func TestGatewaySettings(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, true}, // the image runner is the default
		{map[string]string{"ALFRED_RUNNER": "host"}, false},
		{map[string]string{"ALFRED_GATEWAY": "off"}, false},
		{map[string]string{"ALFRED_GATEWAY": "on"}, true},
	} {
		c, err := Load("serve", nil, env(tc.env), io.Discard, testKinds)
		if err != nil || c.Sealing() != tc.want || c.GatewayForwarder != "" {
			t.Errorf("%v: %v, sealing %v; want %v", tc.env, err, c.Sealing(), tc.want)
		}
	}
	c, err := Load("serve", nil, env(map[string]string{"ALFRED_GATEWAY": "on", "ALFRED_GATEWAY_FORWARDER": "/opt/alfred-forward"}), io.Discard, testKinds)
	if err != nil || !c.Sealing() || c.GatewayForwarder != "/opt/alfred-forward" {
		t.Fatalf("on: %v %+v", err, c)
	}
	for _, bad := range []map[string]string{
		{"ALFRED_GATEWAY": "yes"},
		{"ALFRED_GATEWAY": "on", "ALFRED_RUNNER": "host"},
		{"ALFRED_GATEWAY_FORWARDER": "bin/alfred-forward"},
	} {
		if _, err := Load("serve", nil, env(bad), io.Discard, testKinds); err == nil || !strings.Contains(err.Error(), "ALFRED_GATEWAY") {
			t.Errorf("%v: %v", bad, err)
		}
	}
}
