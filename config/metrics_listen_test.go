package config

import (
	"io"
	"strings"
	"testing"
)

// TestMetricsListen: ALFRED_METRICS_LISTEN is empty or a host:port other
// than the pages' own.
func TestMetricsListen(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string   // MetricsListen when accepted
		errs []string // what the error says when refused
	}{
		{name: "default", want: ""},
		{name: "an address", env: map[string]string{"ALFRED_METRICS_LISTEN": "127.0.0.1:9100"}, want: "127.0.0.1:9100"},
		{name: "a flag", args: []string{"-metrics-listen", ":9100"}, want: ":9100"},
		{name: "not host:port", env: map[string]string{"ALFRED_METRICS_LISTEN": "9100"}, errs: []string{"ALFRED_METRICS_LISTEN", "host:port"}},
		{name: "a bad port", env: map[string]string{"ALFRED_METRICS_LISTEN": "127.0.0.1:70000"}, errs: []string{"ALFRED_METRICS_LISTEN", "65535"}},
		{name: "the pages' address", env: map[string]string{"ALFRED_LISTEN": "127.0.0.1:9000", "ALFRED_METRICS_LISTEN": "127.0.0.1:9000"},
			errs: []string{"ALFRED_METRICS_LISTEN", "ALFRED_LISTEN", "empty"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load("serve", tc.args, env(tc.env), io.Discard, testKinds)
			if tc.errs == nil {
				if err != nil {
					t.Fatal(err)
				}
				if c.MetricsListen != tc.want {
					t.Errorf("MetricsListen = %q, want %q", c.MetricsListen, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, MetricsListen %q", c.MetricsListen)
			}
			for _, w := range tc.errs {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
