// Package e2e holds the gateway's end-to-end reliability suite: real
// redis-server, nats-server and wsgateway processes started, slowed, cut and
// killed by the tests, each fault test ending in a ledger check; a table of
// hostile inputs; the security controls visible from outside; and a soak
// that guards against leaks. The package has no API: everything is in its
// _test.go files. docs/reliability.md reports what the tests measure.
package e2e
