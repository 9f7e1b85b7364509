// Package client is the Go client of the wsgateway wire contract v1
// (docs/protocol.md): for bots, game servers, the load generator and tests.
//
// A Client holds one WebSocket to a gateway and multiplexes every call over
// it: many requests may be in flight at once (pipelining), each matched to
// its reply by id. With Options.Reconnect set, a lost connection is redialed
// with exponential backoff and jitter (moving to the next of Options.URLs on
// each failed attempt), subscriptions are renewed, and every score that was
// not acknowledged is sent again with the same id — safe because the gateway
// applies a (board, id) at most once (R4). A renewal resumes the board's
// stream (docs/protocol.md §15): it names the epoch and the greatest seq the
// subscription holds, and the gateway sends only what changed meanwhile (the
// final standings of periods that ended, then the frames that moved), or
// everything when it cannot resume (Subscription.Resumed). A gateway that
// drains says when to come back (Options.OnDraining); the client reconnects
// then, not before, so a rolling restart spreads its clients over the other
// nodes. Reads (page, rank, subscribe) are
// retried the same way; auth is not, and fails with ErrConnLost.
//
// All methods of a Client may be called concurrently. Every call honours its
// context: when it is cancelled the call returns ctx.Err() and its score, if
// any, is no longer re-sent (the caller may send it again with the same id).
//
// Live frames arrive two ways: through Options.OnTop and Options.OnView,
// called on the client's read goroutine (they must return quickly, or every
// reply waits behind them), and through a Subscription's Top and View
// channels, which hold only the newest frame (latest wins, as on the server).
//
// wss:// URLs work as ws:// ones; Options.TLSConfig sets the roots for a
// gateway whose certificate a private CA signed, keeping the Client's own
// HTTP client, which gathers the frames written while the socket is busy
// into one write (under TLS as well).
package client
