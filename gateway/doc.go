// Package gateway owns Alfred's model gateway: the one way out of a sealed
// agent sandbox. For each run it serves an HTTP reverse proxy on a unix socket
// of its own (a Session), which the runner bind-mounts into the agent's
// container; a small forwarder in the container (cmd/alfred-forward) carries
// each TCP connection to 127.0.0.1:<port> to that socket, and each adapter
// points its CLI's base-URL setting at http://127.0.0.1:<port>/<provider>
// (or, for an intercepted provider, its HTTPS proxy at 127.0.0.1:<port>).
//
// What it owns:
//
//   - Credentials. The container holds only a per-run token (Session.Token),
//     which the gateway accepts on that run's socket alone and which stops
//     working when the session closes. The gateway takes the token from
//     wherever the CLI put its key (Authorization: Bearer, x-api-key,
//     x-goog-api-key, api-key, the key= query parameter, Proxy-Authorization),
//     strips every one of those, and adds the provider's real credential
//     (Provider.Header/Scheme, or Provider.Query for Gemini's key=). The real
//     key is never logged, never put in an error, and is redacted from the
//     headers and bodies of error answers.
//   - Egress. A request reaches a configured provider (by the first path
//     segment, or by its host in an absolute-form proxy request), a host of
//     Options.Allow, or a host its own run was opened with (Open's allow: a
//     project's allowlist); anything else, including CONNECT and
//     absolute-form requests to other hosts, is answered 403 and recorded on
//     the session (Session.Refused). CONNECT to an allowed host is tunnelled
//     (not metered).
//   - Interception. A provider a CLI reaches only as an HTTPS client, with
//     the gateway as its proxy (Provider.Intercepted: Copilot signed in to
//     GitHub, NameCopilot, at api.github.com and the Copilot API hosts), is
//     served by answering the CONNECT itself: with the run's token (the
//     proxy password), the gateway says the connection is established and
//     terminates TLS with a certificate for that host alone, signed by its
//     own certificate authority (made by New: ECDSA P-256, its key in
//     memory only; host certificates a day long, kept per host until an
//     hour before their end). The CLI trusts that authority through the
//     certificate file of its session (Session.CAPath, mounted read-only at
//     ContainerCA; Gateway.CACert). Each request inside is then a provider
//     request like any other: token checked (401 without it), the host's
//     endpoints only (403 in the host's error shape, ErrorShapeGitHub for
//     api.github.com), the key swapped in (SchemeAsSent: Bearer or token,
//     as the CLI sent the run's token), budget, metering, forwarded over
//     TLS to the host's URL. A token behind one of TokenPrefixes
//     (github_pat_: the only shape Copilot accepts) is the token.
//   - Endpoints. To a provider, only its model endpoints are forwarded
//     (Provider.Endpoints: a method and a path pattern each, matched after
//     the provider's base path, as the request is composed): Anthropic POST
//     /v1/messages and /v1/messages/count_tokens, GET /v1/models and
//     /v1/models/{model}; OpenAI POST /v1/responses, /v1/responses/compact
//     and /v1/chat/completions, GET /v1/models and /v1/models/{model};
//     Gemini POST /v1beta/models/{model}:generateContent,
//     :streamGenerateContent and :countTokens, GET /v1beta/models and
//     /v1beta/models/{model}; xAI POST /v1/chat/completions and
//     /v1/responses, GET /v1/models and /v1/models/{model}; Copilot, at
//     api.github.com, GET /copilot_internal/user, /managed_settings and
//     /team_customizations, and at the Copilot API hosts GET /models, POST
//     /models/session, /auto, /responses, /chat/completions and
//     /v1/messages. Any other path or method, a dot or empty segment, a
//     backslash, an encoded dot, slash, backslash or percent sign (%2e,
//     %2f, %5c, %25, in any case), a path outside the base path in an
//     absolute-form request, a connection upgrade (WebSocket: its frames
//     could not be metered) and a CONNECT to a provider's host (one not
//     intercepted) are answered 403 in the provider's own error shape
//     (Provider.ErrorShape), naming the path, and recorded with the reason
//     (Refusal.Reason). The token is checked first: a request without it is
//     answered 401 and not recorded.
//   - Metering. Token counts are read from the providers' answers as they
//     stream through (Anthropic messages and its SSE message_start /
//     message_delta usage, OpenAI chat completions and responses usage
//     including streamed usage chunks, Gemini usageMetadata, and JSON Lines
//     batch results, each line an answer of its own: OpenAI's
//     response.body.usage, Anthropic's result.message.usage, Gemini's
//     response.usageMetadata) and summed per session (Session.Usage). There
//     is no price table in Alfred (the agent adapters take cost from the
//     CLIs' own output), so the gateway reports no cost.
//   - Budget. Session.SetBudget holds a session to the token budget:
//     once what the issue spent before plus what the session metered is at
//     or over the limit, every provider request is refused before it is
//     forwarded (400 in the provider's shape, which the CLI shows and does
//     not retry) and recorded, and Session.BudgetReached says the budget
//     stopped the run. A request already forwarded is never cut.
//   - Streaming. Answers pass through unbuffered: every chunk the provider
//     sends is flushed to the agent as it comes.
//
// It imports no other Alfred package but internal/redact.
package gateway
