package forgejotest

type hookTarget struct{ url, secret string }
