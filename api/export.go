package api

// Export of a board's period (docs/protocol.md §18): GET
// …/export?period=&format=ndjson|csv[&hidden=true], admin only, streamed
// a chunk at a time (rank.Seasons.Scan): the node holds one chunk, never
// the board.

import (
	"bufio"
	"context"
	"encoding/csv"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// exportChunk is the entries read (and written) at a time: a few
// milliseconds of one store step, a few hundred KB of output.
const exportChunk = 2000

// exportWriteTimeout is how long the client may take to accept a chunk:
// the server's write timeout bounds a whole answer, which an export of a
// large board outlasts, so each chunk moves the deadline on.
const exportWriteTimeout = 30 * time.Second

// exportFormat is an export's output: NDJSON or CSV.
type exportFormat int

const (
	exportNDJSON exportFormat = iota
	exportCSV
)

func (a *API) export(c *fiber.Ctx) error {
	id, err := managedBoard(c)
	if err != nil {
		return err
	}
	var format exportFormat
	switch f := c.Query("format"); f {
	case "", "ndjson":
	case "csv":
		format = exportCSV
	default:
		return errf(proto.CodeBadRequest, "format: %q is not ndjson or csv", truncateQuery(f))
	}
	hidden, err := queryBool(c, "hidden")
	if err != nil {
		return err
	}
	// The first chunk is read here, so a board or period that cannot be
	// read is answered with its status before the 200 goes out.
	ctx := a.ctx()
	b, err := a.deps.Store.Board(ctx, id)
	if err != nil {
		return fmt.Errorf("api: export %s: %w", id, err)
	}
	pg, err := a.deps.Store.Scan(ctx, id, rank.PeriodSel(c.Query("period")), "", exportChunk, hidden)
	if err != nil {
		return fmt.Errorf("api: export %s: %w", id, err)
	}
	name := id
	if b.Reset != rank.None {
		name += "-" + strconv.FormatInt(pg.Period, 10)
	}
	switch format {
	case exportCSV:
		c.Set(fiber.HeaderContentType, "text/csv; charset=utf-8")
		c.Set(fiber.HeaderContentDisposition, `attachment; filename="`+name+`.csv"`)
	default:
		c.Set(fiber.HeaderContentType, "application/x-ndjson")
		c.Set(fiber.HeaderContentDisposition, `attachment; filename="`+name+`.ndjson"`)
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	if c.Method() == fiber.MethodHead {
		return nil
	}
	a.log.Info("api: export", "board", id, "period", pg.Period, "hidden", hidden, "sub", principal(c).Member)
	x := &exporter{a: a, board: id, sel: rank.SelIndex(b, pg.Period), hidden: hidden, format: format,
		conn: c.Context().Conn()}
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) { x.run(w, pg) })
	return nil
}

// exporter writes one export after its handler returned, on fasthttp's
// stream goroutine.
type exporter struct {
	a      *API
	board  string
	sel    rank.PeriodSel // the period, by index: a period that ends meanwhile is read on
	hidden bool
	format exportFormat
	conn   net.Conn
}

// run writes pg and every chunk after it. A failure after the first byte
// can no longer change the status: the connection is closed without the
// body's last chunk, so the client sees an incomplete transfer, never a
// short file that looks whole.
func (x *exporter) run(w *bufio.Writer, pg rank.ScanPage) {
	var cw *csv.Writer
	if x.format == exportCSV {
		cw = csv.NewWriter(w)
		cw.UseCRLF = true // RFC 4180
		_ = cw.Write([]string{"rank", "member", "score", "name", "meta"})
	}
	var line []byte
	var rows, chunks int
	start := time.Now()
	for {
		if err := x.conn.SetWriteDeadline(time.Now().Add(exportWriteTimeout)); err != nil {
			return
		}
		x.profiles(x.a.ctx(), pg.Entries)
		for _, e := range pg.Entries {
			if cw != nil {
				_ = cw.Write(csvRow(e, pg.Decimals))
				continue
			}
			line = appendExportLine(line[:0], e, pg.Decimals)
			if _, err := w.Write(line); err != nil {
				return // the client left
			}
		}
		if cw != nil {
			cw.Flush()
			if cw.Error() != nil {
				return
			}
		}
		if err := w.Flush(); err != nil {
			return
		}
		rows += len(pg.Entries)
		chunks++
		if pg.Next == "" {
			x.a.log.Info("api: export done", "board", x.board, "period", pg.Period, "entries", rows, "chunks", chunks, "duration", time.Since(start))
			return
		}
		var err error
		pg, err = x.a.deps.Store.Scan(x.a.ctx(), x.board, x.sel, pg.Next, exportChunk, x.hidden)
		if err != nil {
			x.a.log.Warn("api: export cut short", "board", x.board, "entries", rows, "err", err)
			_ = x.conn.Close()
			return
		}
	}
}

// profiles gives a chunk's entries their profile names (R20), read
// straight from the store: an export would push every other member out of
// the node's profile cache. What cannot be read in time keeps the stored
// name, as a read's decoration does. Without a Decorator, the API's reads
// show stored names, and so does the export.
func (x *exporter) profiles(ctx context.Context, es []rank.ScanEntry) {
	if len(es) == 0 || x.a.deps.Decorator == nil {
		return // no decoration: reads show stored names too
	}
	ids := make([]string, len(es))
	for i, e := range es {
		ids[i] = e.Member
	}
	ps, err := x.a.deps.Profiles.Profiles(ctx, ids)
	if err != nil {
		x.a.log.Debug("api: export: profiles not read", "board", x.board, "err", err)
		return
	}
	for i := range es {
		if p, ok := ps[es[i].Member]; ok {
			p.Decorate(&es[i].Entry)
		}
	}
}

// appendExportLine appends one NDJSON line: {"rank","member","score",
// "name","meta"}, name and meta null when none, and "hidden":true on an
// entry a ban hides (hidden=true only).
func appendExportLine(b []byte, e rank.ScanEntry, decimals int) []byte {
	b = append(b, `{"rank":`...)
	b = strconv.AppendInt(b, e.Rank, 10)
	b = append(b, `,"member":`...)
	b = proto.AppendJSONString(b, e.Member)
	b = append(b, `,"score":`...)
	b = proto.AppendScore(b, e.Score, decimals)
	b = append(b, `,"name":`...)
	if e.Name == "" {
		b = append(b, "null"...)
	} else {
		b = proto.AppendJSONString(b, e.Name)
	}
	b = append(b, `,"meta":`...)
	if e.Meta == "" {
		b = append(b, "null"...)
	} else {
		b = append(b, e.Meta...) // a JSON object, checked when it was stored
	}
	if e.Hidden {
		b = append(b, `,"hidden":true`...)
	}
	return append(b, "}\n"...)
}

// csvRow is one CSV record: rank, member, score, name and meta as JSON
// ("" when none).
func csvRow(e rank.ScanEntry, decimals int) []string {
	return []string{strconv.FormatInt(e.Rank, 10), e.Member, string(proto.AppendScore(nil, e.Score, decimals)), e.Name, string(e.Meta)}
}

// queryBool reads an optional true/false query parameter.
func queryBool(c *fiber.Ctx, name string) (bool, error) {
	switch v := c.Query(name); v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	default:
		return false, errf(proto.CodeBadRequest, "%s: %q is not true or false", name, truncateQuery(v))
	}
}

// truncateQuery keeps a refused query value short in a message.
func truncateQuery(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}
