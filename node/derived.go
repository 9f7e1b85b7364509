package node

// Live frames of derived boards (docs/protocol.md §8, R23): a derived board's
// store changes with every event on its sources, which produce the Change
// (the derived board has none of its own). The node keeps a reverse index
// source → dependants, built from the configs at start and kept by board
// events (this node's and the bus's), and marks the dependants of every
// changed source for a fresh read in the live engine: on this node from
// the store's sink, on the others from the bus, so frames follow within
// one interval.

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// derivedIndex maps each source board to its derived boards. Safe for
// concurrent use: the sink calls it from the store's goroutines.
type derivedIndex struct {
	mu   sync.RWMutex
	deps map[string][]string // source -> derived boards
	srcs map[string][]string // derived board -> its sources
}

// set records board b's config: its sources, when it is derived.
func (x *derivedIndex) set(b rank.Board) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.dropLocked(b.ID)
	if !b.Derived() {
		return
	}
	if x.deps == nil {
		x.deps, x.srcs = map[string][]string{}, map[string][]string{}
	}
	srcs := b.Source.Boards()
	x.srcs[b.ID] = srcs
	for _, s := range srcs {
		x.deps[s] = append(x.deps[s], b.ID)
	}
}

// drop forgets a deleted board.
func (x *derivedIndex) drop(id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.dropLocked(id)
}

func (x *derivedIndex) dropLocked(id string) {
	for _, s := range x.srcs[id] {
		x.deps[s] = slices.DeleteFunc(x.deps[s], func(d string) bool { return d == id })
		if len(x.deps[s]) == 0 {
			delete(x.deps, s)
		}
	}
	delete(x.srcs, id)
}

// dependants calls f once for each derived board over a board of batch.
func (x *derivedIndex) dependants(batch []rank.Change, f func(board string)) {
	x.mu.RLock()
	if len(x.deps) == 0 {
		x.mu.RUnlock()
		return
	}
	var hit []string
	for i := range batch {
		for _, d := range x.deps[batch[i].Board] {
			if !slices.Contains(hit, d) {
				hit = append(hit, d)
			}
		}
	}
	x.mu.RUnlock()
	for _, d := range hit {
		f(d)
	}
}

// loadDerived builds the index from every stored config.
func (n *Node) loadDerived(ctx context.Context) error {
	bs, err := n.store.Boards(ctx)
	if err != nil {
		return err
	}
	for _, b := range bs {
		n.derived.set(b)
	}
	return nil
}

// followSources marks the dependants of the boards of batch changed.
func (n *Node) followSources(batch []rank.Change) {
	n.derived.dependants(batch, n.live.Resync)
}

// remoteChanges is the bus's OnChanges: another node's changes, for live
// frames and for the dependants of their boards.
func (n *Node) remoteChanges(batch []rank.Change) {
	n.live.Changed(batch)
	n.followSources(batch)
}

// derivedBoard refreshes the index for a board created, changed or deleted
// (here or on another node).
func (n *Node) derivedBoard(board string, deleted bool) {
	if deleted {
		n.derived.drop(board)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	b, err := n.store.GetBoard(ctx, board)
	if err != nil {
		n.log.Warn("node: derived boards: config not read; its frames follow its sources after the next change", "board", board, "err", err)
		return
	}
	n.derived.set(b)
}

// sources is the sources of a derived board, nil for any other.
func (x *derivedIndex) sources(id string) []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return slices.Clone(x.srcs[id])
}

// interest is the default Config.Interest: a board's frames need its own
// changes and, on a derived board, its sources' (the derived board has no
// change events of its own), so a node watching it subscribes to theirs.
func (n *Node) interest(board string) []string {
	return append([]string{board}, n.derived.sources(board)...)
}
