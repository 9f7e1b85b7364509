package rank

import (
	"context"
	"errors"
)

// AutoCreate wraps a Store so that a board is created with DefaultBoard on
// first use (the --dev behaviour, R15). Only operations that name one board
// create it; Boards and DeleteBoard pass through.
func AutoCreate(s Store) Store { return autoCreate{s} }

type autoCreate struct{ Store }

var _ Store = autoCreate{}

// retry runs op once more after creating the board when op found it unknown.
func retry[T any](ctx context.Context, s Store, board string, op func() (T, error)) (T, error) {
	v, err := op()
	if !errors.Is(err, ErrUnknownBoard) || !ValidBoardID(board) {
		return v, err
	}
	if _, cerr := s.PutBoard(ctx, DefaultBoard(board)); cerr != nil {
		return v, cerr
	}
	return op()
}

func (a autoCreate) GetBoard(ctx context.Context, id string) (Board, error) {
	return retry(ctx, a.Store, id, func() (Board, error) { return a.Store.GetBoard(ctx, id) })
}

func (a autoCreate) Count(ctx context.Context, board string) (int64, error) {
	return retry(ctx, a.Store, board, func() (int64, error) { return a.Store.Count(ctx, board) })
}

func (a autoCreate) Board(ctx context.Context, id string) (Board, error) {
	return retry(ctx, a.Store, id, func() (Board, error) { return a.Store.Board(ctx, id) })
}

// Apply creates the board first when the engine does not know it: the
// engine completes asynchronously, and Done must not call the store, so a
// retry after an unknown_board outcome is not an option.
func (a autoCreate) Apply(ctx context.Context, e Event, done Done) {
	if _, err := a.Board(ctx, e.Board); err != nil && !errors.Is(err, ErrInvalidBoard) {
		done(Result{}, err)
		return
	}
	a.Store.Apply(ctx, e, done)
}

func (a autoCreate) Top(ctx context.Context, board string, p PeriodSel, offset, limit int) (Page, error) {
	return retry(ctx, a.Store, board, func() (Page, error) { return a.Store.Top(ctx, board, p, offset, limit) })
}

func (a autoCreate) Ranks(ctx context.Context, board string, p PeriodSel, members []string, around int) (Ranks, error) {
	return retry(ctx, a.Store, board, func() (Ranks, error) { return a.Store.Ranks(ctx, board, p, members, around) })
}
