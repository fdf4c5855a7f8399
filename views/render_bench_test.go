package views

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkRender: the configuration page for an anonymous visitor, and
// for a signed-in person, whose header carries their sign-out token (a
// template set of signedSets, not a clone per request).
func BenchmarkRender(b *testing.B) {
	a := &Access{Key: []byte("k1")}
	rec := httptest.NewRecorder()
	if err := a.setCookie(rec, httptest.NewRequest("GET", "/", nil), sessionCookie, session{Logins: map[string]string{"forgejo": "alice"}}, 60); err != nil {
		b.Fatal(err)
	}
	d := Deps{Access: a, Logger: slog.New(slog.DiscardHandler)}
	for _, c := range []struct {
		name   string
		cookie *http.Cookie
	}{{"anonymous", nil}, {"signed-in", rec.Result().Cookies()[0]}} {
		r := httptest.NewRequest("GET", "/config", nil)
		if c.cookie != nil {
			r.AddCookie(c.cookie)
		}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				d.render(httptest.NewRecorder(), r, "config.html", homeData{})
			}
		})
	}
}
