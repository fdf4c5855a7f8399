package views

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
)

// Recover answers 500 for a request whose handler panicked, and logs the
// panic with its stack, so that one bad request (a webhook the parser chokes
// on) costs that request alone. The forge delivers a webhook answered 500
// again later.
func Recover(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			switch v {
			case nil:
				return
			case http.ErrAbortHandler:
				panic(v) // the server's own way to abort a response
			}
			log.Error("panic recovered", "in", "http", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			http.Error(w, "internal error", http.StatusInternalServerError)
		}()
		next.ServeHTTP(w, r)
	})
}
