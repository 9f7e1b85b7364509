package api

// Import of a season (docs/protocol.md §18): POST …/import?id=&period=,
// admin only, an NDJSON body read line by line as it arrives (never held
// whole: at most one buffer and importWindow events in flight), each line
// the score event "<id>:<line>" on the ordinary apply path.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// Import limits (§18).
const (
	// DefaultMaxImport is Config.MaxImport's zero-value meaning.
	DefaultMaxImport = 256 << 20
	// MaxImportID bounds an import id, so "<id>:<line>" stays a request
	// id (at most 64 characters) for any line of the largest body.
	MaxImportID = 48
	// maxImportErrors is how many line errors an answer lists.
	maxImportErrors = 100
	// importWindow bounds the events of one import in the store at a
	// time: enough to fill a Redis lane's rounds, few enough that other
	// writers still get their turn.
	importWindow = 512
	// maxImportLine bounds one line; a longer one fails alone.
	maxImportLine = 16 << 10
	// importIdle is how long the body may stall between two reads.
	importIdle = 30 * time.Second
	// importNames is how many names go to the profiles at once.
	importNames = 1000
	// overDrain is how much of a body past MaxImport is read and dropped
	// before the 413.
	overDrain = 256 << 10
	// importMarkEvery is how many lines go between two marks of an
	// import's progress (a node that dies mid-import leaves one).
	importMarkEvery = 100_000
)

// importBody answers POST …/import.
type importBody struct {
	Applied   int64         `json:"applied"`
	Duplicate int64         `json:"duplicate"`
	Failed    int64         `json:"failed"`
	Errors    []importError `json:"errors"`
}

type importError struct {
	Line    int64  `json:"line"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// isImport reports whether a request is an import, whose body its handler
// reads as a stream (Serve gives it no buffer) up to Config.MaxImport.
func isImport(method, target []byte) bool {
	if string(method) != fiber.MethodPost {
		return false
	}
	if i := bytes.IndexByte(target, '?'); i >= 0 {
		target = target[:i]
	}
	rest, ok := bytes.CutPrefix(target, []byte("/api/v1/boards/"))
	if !ok {
		return false
	}
	board, ok := bytes.CutSuffix(rest, []byte("/import"))
	return ok && len(board) > 0 && bytes.IndexByte(board, '/') < 0
}

// bodyLimit is the largest body the request may send.
func (a *API) bodyLimit(h *fasthttp.RequestHeader) int64 {
	if isImport(h.Method(), h.RequestURI()) {
		return a.cfg.MaxImport
	}
	return a.cfg.MaxBody
}

func (a *API) importScores(c *fiber.Ctx) error {
	// Whatever is answered before the body's end leaves the rest unread:
	// the connection cannot carry another request.
	c.Context().SetConnectionClose()
	id, err := managedBoard(c)
	if err != nil {
		return err
	}
	impID := c.Query("id")
	if len(impID) > MaxImportID || !proto.ValidRequestID(impID) {
		return errf(proto.CodeBadRequest, "id: the import id must be 1-%d characters [A-Za-z0-9_.:-]", MaxImportID)
	}
	ctx := a.ctx()
	b, err := a.deps.Store.Board(ctx, id)
	if err != nil {
		return fmt.Errorf("api: import %s: %w", id, err)
	}
	if b.Derived() {
		return fmt.Errorf("api: import %s: %w", id, rank.ErrReadOnly)
	}
	into, err := a.importPeriod(ctx, b, rank.PeriodSel(c.Query("period")))
	if err != nil {
		return fmt.Errorf("api: import %s: %w", id, err)
	}
	im := &importer{a: a, board: b, id: impID, into: into, sub: a.submitters.Add(1),
		profiles: principal(c).Boards == nil}
	if im.skip, err = a.importSkip(ctx, b, impID); err != nil {
		return fmt.Errorf("api: import %s: %w", id, err)
	}
	// Serve leaves an import's body unread (fast.go); Body() would read
	// it whole, so it is only for a body fasthttp had read (fiber's Test).
	var r io.Reader
	if stream := c.Context().RequestBodyStream(); stream != nil {
		r = &idleReader{r: stream, conn: c.Context().Conn()}
	} else {
		r = bytes.NewReader(c.Request().Body())
	}
	start := time.Now()
	out, err := im.run(r)
	a.log.Info("api: import", "board", id, "id", impID, "period", into, "applied", out.Applied, "duplicate", out.Duplicate,
		"failed", out.Failed, "duration", time.Since(start), "err", err, "sub", principal(c).Member)
	if err != nil {
		return err
	}
	c.Context().Response.Header.ResetConnectionClose()
	return c.JSON(out)
}

// importPeriod is the past period an import writes (0: the current one,
// by R17 as any event), checked now rather than on every line.
func (a *API) importPeriod(ctx context.Context, b rank.Board, sel rank.PeriodSel) (int64, error) {
	if sel == "" || sel == "current" {
		return 0, nil
	}
	now, err := a.deps.Store.Now(ctx)
	if err != nil {
		return 0, err
	}
	idx, err := sel.Resolve(b, now)
	if err != nil {
		return 0, err
	}
	if idx == rank.PeriodAt(b, now).Index {
		return 0, nil
	}
	if _, _, err := b.Restore(idx, now); err != nil {
		return 0, err
	}
	return idx, nil
}

// importSkip is the lines a re-run of import id answers as duplicates
// without sending them: those an earlier run settled, once that run is
// older than the board's idempotency window, whose records of them may
// be gone (R38; within the window the records answer).
func (a *API) importSkip(ctx context.Context, b rank.Board, id string) (int64, error) {
	m, err := a.deps.Store.ImportMark(ctx, b.ID, id)
	if err != nil || m.Line == 0 {
		return 0, err
	}
	now, err := a.deps.Store.Now(ctx)
	if err != nil {
		return 0, err
	}
	if now.Sub(m.Start) < time.Duration(b.IdempotencyWindow) {
		return 0, nil
	}
	return m.Line, nil
}

// importer applies one import's lines.
type importer struct {
	a        *API
	board    rank.Board
	id       string
	into     int64
	sub      uint64 // the store applies one submitter's events in order: line order
	profiles bool   // names go to profiles (a token for every board)
	skip     int64  // lines up to it are duplicates, not sent (importSkip)

	wg    sync.WaitGroup
	slots chan struct{}

	mu     sync.Mutex // guards the fields below, which dones write
	out    importBody
	down   error             // the store's first unavailable answer: nothing more is sent
	downAt int64             // the line that met it: lines before it were settled
	names  []rank.MemberName // of applied lines, not yet given to the profiles
}

// run reads r to its end (or the store's first failure) and returns the
// answer; an error is the request's instead (413, 503, a broken body).
func (im *importer) run(r io.Reader) (importBody, error) {
	im.slots = make(chan struct{}, importWindow)
	im.out.Errors = []importError{}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	lr := &limitReader{r: r, left: im.a.cfg.MaxImport}
	br := bufio.NewReaderSize(lr, maxImportLine)
	var line int64
	var readErr error
	settled := int64(0) // the lines read whole
	for readErr == nil {
		raw, err := br.ReadSlice('\n')
		line++
		long := errors.Is(err, bufio.ErrBufferFull)
		for errors.Is(err, bufio.ErrBufferFull) { // the rest of a long line
			_, err = br.ReadSlice('\n')
		}
		if err != nil && err != io.EOF {
			// A line cut by the body's failure is not a line: neither
			// applied nor marked, a re-run sends it whole.
			readErr = err
			break
		}
		switch {
		case long:
			im.fail(line, fmt.Errorf("%w: line longer than %d bytes", rank.ErrBadRequest, maxImportLine))
		case len(bytes.TrimSpace(raw)) > 0:
			im.line(ctx, line, raw)
		}
		settled = line
		readErr = err
		if im.stopped() {
			break
		}
		if line%importMarkEvery == 0 {
			im.wg.Wait()
			im.mark(line)
		}
	}
	im.wg.Wait()
	im.flushNames(true)
	im.mark(settled)
	im.mu.Lock()
	defer im.mu.Unlock()
	switch {
	case im.down != nil:
		return im.out, fmt.Errorf("api: import %s: %w (after %d lines applied; send the import again with the same id to finish it)",
			im.board.ID, im.down, im.out.Applied)
	case lr.over:
		// A little of what follows is read and dropped, so a client that
		// sent a bit too much has finished sending and reads the 413
		// (closing with unread bytes would reset the connection first).
		_, _ = io.CopyN(io.Discard, lr.r, overDrain)
		return im.out, tooLarge("request body larger than %d bytes (%d lines applied before; the rest was not read)", im.a.cfg.MaxImport, im.out.Applied)
	case readErr != io.EOF:
		if errors.Is(readErr, os.ErrDeadlineExceeded) {
			return im.out, &Error{code: proto.CodeBadRequest, status: 408, msg: "request body stalled"}
		}
		return im.out, errf(proto.CodeBadRequest, "could not read the request body")
	}
	return im.out, nil
}

// line decodes one line and submits its event; a bad line fails alone.
func (im *importer) line(ctx context.Context, n int64, raw []byte) {
	l, err := proto.DecodeImportLine(bytes.TrimSpace(raw))
	if err == nil {
		err = rank.CheckMemberID(l.Member)
	}
	if err == nil && l.Name != "" {
		if l.Name, err = rank.NormalizeName(l.Name); err != nil {
			err = fmt.Errorf("%w: field name: %v", rank.ErrBadRequest, err)
		}
	}
	ev := rank.Event{Board: im.board.ID, ID: im.id + ":" + strconv.FormatInt(n, 10), Member: l.Member, Name: l.Name,
		Op: l.Op, Amount: l.Amount, Meta: l.Meta, Into: im.into, Submitter: im.sub}
	if err == nil {
		err = ev.Check(im.board)
	}
	if err != nil {
		im.fail(n, err)
		return
	}
	if n <= im.skip {
		im.mu.Lock()
		im.out.Duplicate++
		im.mu.Unlock()
		return
	}
	im.slots <- struct{}{}
	im.flushNames(false)
	im.wg.Add(1)
	im.a.deps.Store.Apply(ctx, ev, func(r rank.Result, err error) {
		defer func() { <-im.slots; im.wg.Done() }()
		im.mu.Lock()
		defer im.mu.Unlock()
		switch {
		case err == nil && r.Duplicate:
			im.out.Duplicate++
		case err == nil:
			im.out.Applied++
			im.a.count(r)
		case proto.CodeOf(err) == proto.CodeUnavailable || errors.Is(err, context.Canceled):
			if im.down == nil || n < im.downAt {
				im.down, im.downAt = err, n
			}
			return
		default:
			im.failLocked(n, err)
			return
		}
		if ev.Name != "" && im.profiles {
			im.names = append(im.names, rank.MemberName{Member: ev.Member, Name: ev.Name})
		}
	})
}

// mark notes in the store that the lines up to line are settled (all
// but those from the store's first failure on, which a re-run sends
// again), for a re-run after the idempotency window (importSkip).
func (im *importer) mark(line int64) {
	im.mu.Lock()
	if im.down != nil {
		line = min(line, im.downAt-1)
	}
	im.mu.Unlock()
	if line <= im.skip {
		return
	}
	if err := im.a.deps.Store.MarkImport(im.a.ctx(), im.board.ID, im.id, line); err != nil {
		im.a.log.Warn("api: import: mark not written", "board", im.board.ID, "id", im.id, "line", line, "err", err)
	}
}

// stopped reports whether the store failed: the import stops reading, so
// no line after the failure is sent, and a re-run finishes it (R38).
func (im *importer) stopped() bool {
	im.mu.Lock()
	defer im.mu.Unlock()
	return im.down != nil
}

func (im *importer) fail(n int64, err error) {
	im.mu.Lock()
	defer im.mu.Unlock()
	im.failLocked(n, err)
}

// failLocked counts line n failed and keeps its error among the first
// maxImportErrors by line (dones and parse errors come in either order).
func (im *importer) failLocked(n int64, err error) {
	im.out.Failed++
	es := im.out.Errors
	if len(es) == maxImportErrors && es[len(es)-1].Line < n {
		return
	}
	d := im.a.detail(err)
	i, _ := slices.BinarySearchFunc(es, n, func(e importError, n int64) int { return int(e.Line - n) })
	es = slices.Insert(es, i, importError{Line: n, Code: d.Code, Message: d.Message})
	im.out.Errors = es[:min(len(es), maxImportErrors)]
}

// flushNames gives the profiles the names of applied lines (a batch at a
// time, or what is left at the end) and tells the node which changed.
func (im *importer) flushNames(final bool) {
	im.mu.Lock()
	if len(im.names) < importNames && !(final && len(im.names) > 0) {
		im.mu.Unlock()
		return
	}
	batch := im.names
	im.names = nil
	im.mu.Unlock()
	changed, err := im.a.deps.Store.NameProfiles(im.a.ctx(), batch)
	if err != nil {
		im.a.log.Warn("api: import: names not given to profiles", "board", im.board.ID, "names", len(batch), "err", err)
	}
	if len(changed) > 0 && im.a.deps.ProfileChanges != nil {
		im.a.deps.ProfileChanges.ProfileChanged(changed...)
	}
}

// limitReader reads at most left bytes of r, then reports over.
type limitReader struct {
	r    io.Reader
	left int64
	over bool
}

var errOverLimit = errors.New("api: body over its limit")

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// One byte more tells a body of exactly the limit from a longer one.
		var one [1]byte
		if n, _ := l.r.Read(one[:]); n > 0 {
			l.over = true
			return 0, errOverLimit
		}
		return 0, io.EOF
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// idleReader moves the connection's read deadline on before each read: a
// body may take as long as its lines take to apply, but must not stall.
type idleReader struct {
	r    io.Reader
	conn net.Conn
}

func (r *idleReader) Read(p []byte) (int, error) {
	if err := r.conn.SetReadDeadline(time.Now().Add(importIdle)); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}
