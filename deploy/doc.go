// Package deploy holds the reference deployment's files (the compose
// topology's configs, Kubernetes manifests, Grafana and Prometheus files);
// it has no code. Its tests parse them, check that every file they name
// exists, and check their metric names against a live gateway.
package deploy
