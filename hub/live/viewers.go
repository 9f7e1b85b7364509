package live

// Viewers counts this node's open subscriptions per board: a connection
// subscribed to a board counts once, whatever frames it asked for. Boards
// without a subscription are absent. The map is the caller's.
//
// It walks every connection's subscriptions under the engine's lock, so it
// is meant for a periodic report (every few seconds), not for a hot path.
func (e *Engine) Viewers() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]int, len(e.boards))
	for _, subs := range e.conns {
		for id := range subs {
			out[id]++
		}
	}
	return out
}
