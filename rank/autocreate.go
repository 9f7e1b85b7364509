package rank

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// DefaultAutoCreateCap is how many boards AutoCreate creates at most.
const DefaultAutoCreateCap = 1000

// AutoCreate wraps a Store for the --dev behaviour (R15: boards are created
// on first use), bounded so that clients cannot make the node hold
// boards without end:
//
//   - Only an accepted write creates a board: an event that passes Check
//     against DefaultBoard, on a valid board id. A read, a refused event or
//     an event that is not even sent never creates one.
//   - Reads of a board that does not exist see it as it would be created:
//     Board answers DefaultBoard, Top, Ranks and Count an empty board. No
//     state is kept for them. GetBoard, Boards and DeleteBoard pass through
//     (so GET of a board's config after DELETE is a 404, and stays one).
//   - At most max boards are created (DefaultAutoCreateCap when max <= 0);
//     past it the first write to a new board gets ErrLimitReached.
func AutoCreate(s Store, max int) Store {
	if max <= 0 {
		max = DefaultAutoCreateCap
	}
	return &autoCreate{Store: s, max: max}
}

type autoCreate struct {
	Store
	max int
	mu  sync.Mutex // guards created; serializes creations
	// created counts the boards this wrapper created; a board deleted
	// later still counts, so the cap bounds creations, not just the live
	// set (a client cannot churn create/delete for free).
	created int
}

var _ Store = (*autoCreate)(nil)

// absent reports whether err means a valid board id that does not exist.
func absent(board string, err error) bool {
	return errors.Is(err, ErrUnknownBoard) && ValidBoardID(board)
}

func (a *autoCreate) Board(ctx context.Context, id string) (Board, error) {
	b, err := a.Store.Board(ctx, id)
	if absent(id, err) {
		return DefaultBoard(id), nil
	}
	return b, err
}

// UnbornEpoch is the epoch of a board AutoCreate shows before its first
// write makes it: the board then gets an epoch of its own, so a resume from
// before is a fresh subscription (§15).
const UnbornEpoch = "-"

func (a *autoCreate) MarkStream(ctx context.Context, id string) (Stream, error) {
	st, err := a.Store.MarkStream(ctx, id)
	if absent(id, err) {
		return Stream{Epoch: UnbornEpoch}, nil
	}
	return st, err
}

func (a *autoCreate) RenewEpoch(ctx context.Context, id, old string) (string, error) {
	e, err := a.Store.RenewEpoch(ctx, id, old)
	if absent(id, err) {
		return UnbornEpoch, nil
	}
	return e, err
}

func (a *autoCreate) Count(ctx context.Context, board string) (int64, error) {
	n, err := a.Store.Count(ctx, board)
	if absent(board, err) {
		return 0, nil
	}
	return n, err
}

func (a *autoCreate) Top(ctx context.Context, board string, p PeriodSel, offset, limit int) (Page, error) {
	pg, err := a.Store.Top(ctx, board, p, offset, limit)
	if absent(board, err) {
		return Page{Board: board, Offset: offset, Entries: []Entry{}}, nil
	}
	return pg, err
}

func (a *autoCreate) Ranks(ctx context.Context, board string, p PeriodSel, members []string, around int) (Ranks, error) {
	rs, err := a.Store.Ranks(ctx, board, p, members, around)
	if absent(board, err) {
		out := Ranks{Board: board, Members: make([]MemberRank, len(members))}
		for i, m := range members {
			out.Members[i] = MemberRank{Member: m}
		}
		return out, nil
	}
	return rs, err
}

func (a *autoCreate) SelfRanks(ctx context.Context, board string, p PeriodSel, members []string, around int) (Ranks, error) {
	rs, err := a.Store.SelfRanks(ctx, board, p, members, around)
	if absent(board, err) {
		return a.Ranks(ctx, board, p, members, around)
	}
	return rs, err
}

// Apply creates the board first when the engine does not know it and the
// event would be accepted on it. Done must not call the store, so the
// board is created before the event is submitted, not after an
// unknown_board outcome.
func (a *autoCreate) Apply(ctx context.Context, e Event, done Done) {
	if _, err := a.Store.Board(ctx, e.Board); absent(e.Board, err) {
		if err := a.create(ctx, e); err != nil {
			done(Result{}, err)
			return
		}
	}
	a.Store.Apply(ctx, e, done)
}

func (a *autoCreate) create(ctx context.Context, e Event) error {
	b := DefaultBoard(e.Board)
	if err := e.Check(b); err != nil {
		return err // refused: nothing is created
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.Store.GetBoard(ctx, e.Board); err == nil {
		return nil // another writer created it meanwhile
	} else if !absent(e.Board, err) {
		return err
	}
	if a.created >= a.max {
		return fmt.Errorf("%w: --dev creates at most %d boards on first use; create board %s with PUT /api/v1/boards/%s",
			ErrLimitReached, a.max, e.Board, e.Board)
	}
	if _, err := a.Store.PutBoard(ctx, b); err != nil {
		return err
	}
	a.created++
	return nil
}

// Region reads of a board that does not exist see a default board, which
// has no regions (§17).
func (a *autoCreate) RegionTop(ctx context.Context, board string, p PeriodSel, region string, offset, limit int) (Page, error) {
	pg, err := a.Store.RegionTop(ctx, board, p, region, offset, limit)
	if absent(board, err) {
		return Page{}, NoRegions(board)
	}
	return pg, err
}

func (a *autoCreate) Regions(ctx context.Context, board string, p PeriodSel) ([]RegionCount, error) {
	rs, err := a.Store.Regions(ctx, board, p)
	if absent(board, err) {
		return nil, NoRegions(board)
	}
	return rs, err
}

func (a *autoCreate) RegionRanks(ctx context.Context, board string, p PeriodSel, members []string, around int) (Ranks, error) {
	rs, err := a.Store.RegionRanks(ctx, board, p, members, around)
	if absent(board, err) {
		return Ranks{}, NoRegions(board)
	}
	return rs, err
}
