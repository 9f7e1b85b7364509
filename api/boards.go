package api

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// DefaultAround is a REST rank read's neighbours on each side (§2); the
// bounds are the WebSocket's (proto.MaxLimit, rank.MaxAround).
const DefaultAround = 5

const principalKey = "principal"

// verifiedKey holds the principal ServeFast verified before the body.
const verifiedKey = "verified"

// authenticate verifies the bearer token and leaves the principal for the
// handler. The token itself is never stored or logged.
func (a *API) authenticate(c *fiber.Ctx) error {
	// ServeFast verified the token of a request with a body before reading
	// it; once is enough.
	if v := c.Locals(verifiedKey); v != nil {
		if p, ok := v.(auth.Principal); ok {
			if err := a.limitMember(c, p); err != nil {
				return err
			}
			c.Locals(principalKey, v) // boxed once, by ServeFast
			return c.Next()
		}
	}
	token, ok := auth.BearerToken(c.Get(fiber.HeaderAuthorization))
	if !ok {
		err := errf(proto.CodeUnauthorized, "missing bearer token: send Authorization: Bearer <jwt>")
		if c.Get(fiber.HeaderAuthorization) == "" {
			return err // limitAnon counted it already
		}
		return a.limitRefused(c, err, nil)
	}
	p, err := a.deps.Verifier.Verify(a.ctx(), token)
	if err != nil {
		switch proto.CodeOf(err) {
		case proto.CodeUnauthorized, proto.CodeTokenExpired:
			return a.limitRefused(c, err, nil)
		case proto.CodeUnavailable:
			return err
		}
		// Whatever else went wrong, the request is not authenticated.
		return a.limitRefused(c, errf(proto.CodeUnauthorized, "invalid token"), nil)
	}
	if err := a.limitMember(c, p); err != nil {
		return err
	}
	c.Locals(principalKey, p)
	return c.Next()
}

func principal(c *fiber.Ctx) auth.Principal {
	p, _ := c.Locals(principalKey).(auth.Principal)
	return p
}

// boardParam is the path's board id, checked for syntax (R15) and against the
// token's boards claim (R11).
func boardParam(c *fiber.Ctx) (string, error) {
	id := c.Params("board")
	if err := rank.CheckBoardID(id); err != nil {
		return "", err
	}
	if !principal(c).MayAccess(id) {
		return "", errf(proto.CodeForbidden, "this token may not access board %s", id)
	}
	return id, nil
}

// mayReach refuses a token limited to some boards (its boards claim) a
// config next that reaches a board outside the claim: a source (the
// derived board shows the source's standings, and as its dependant pins
// the source: its owner could no longer delete it, remove a member or
// change its order) or a group (the slot, and on the memory engine the
// lock, that the boards of a group share) that the claim does not name.
// What the stored config old (nil: none) already names is no new reach:
// whoever created it could, and a limited admin may still retitle it.
func mayReach(p auth.Principal, old *rank.Board, next rank.Board) error {
	if p.Boards == nil {
		return nil
	}
	for _, src := range next.Source.Boards() {
		if !p.MayAccess(src) && (old == nil || !slices.Contains(old.Source.Boards(), src)) {
			return errf(proto.CodeForbidden, "field source: this token may not access board %s", src)
		}
	}
	if g := next.GroupID(); !p.MayAccess(g) && (old == nil || old.GroupID() != g) {
		return errf(proto.CodeForbidden, "field group: this token may not use group %s (a token limited to some boards may use a group its boards claim names)", g)
	}
	return nil
}

// managedBoard is boardParam for a route that changes the board: the
// token's role must manage boards.
func managedBoard(c *fiber.Ctx) (string, error) {
	id, err := boardParam(c)
	if err != nil {
		return "", err
	}
	if p := principal(c); !p.MayManage() {
		return "", errf(proto.CodeForbidden, "role %s may not manage boards", p.Role)
	}
	return id, nil
}

// queryInt reads an optional integer query parameter within [min, max].
func queryInt(c *fiber.Ctx, name string, def, min, max int) (int, error) {
	s := c.Query(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < min || n > max {
		return 0, errf(proto.CodeBadRequest, "%s: %q is not an integer within %d..%d", name, s, min, max)
	}
	return n, nil
}

// boardsBody answers GET /api/v1/boards: one page of boards in id order;
// Next, when set, is the `after` of the next page.
type boardsBody struct {
	Boards []rank.Board `json:"boards"`
	Next   string       `json:"next,omitempty"`
}

// Board list pages: ?limit= (1–maxBoardsPage, default defaultBoardsPage)
// and ?after=<board id> (the previous page's next).
const (
	defaultBoardsPage = 100
	maxBoardsPage     = 1000
)

func (a *API) listBoards(c *fiber.Ctx) error {
	limit := defaultBoardsPage
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxBoardsPage {
			return errf(proto.CodeBadRequest, "limit: want an integer 1-%d", maxBoardsPage)
		}
		limit = n
	}
	after := c.Query("after")
	all, err := a.deps.Store.Boards(a.ctx())
	if err != nil {
		return fmt.Errorf("api: list boards: %w", err)
	}
	p := principal(c)
	out := make([]rank.Board, 0, min(len(all), limit))
	body := boardsBody{}
	for _, b := range all { // sorted by id
		if b.ID <= after || !p.MayAccess(b.ID) {
			continue
		}
		if len(out) == limit {
			body.Next = out[len(out)-1].ID
			break
		}
		out = append(out, b.WithoutSecrets())
	}
	body.Boards = out
	return c.JSON(body)
}

func (a *API) putBoard(c *fiber.Ctx) error {
	id, err := managedBoard(c)
	if err != nil {
		return err
	}
	body := c.Body()
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}") // every field has a default
	}
	b, err := rank.ParseBoard(id, body)
	if err != nil {
		return err
	}
	ctx := a.ctx()
	if p := principal(c); p.Boards != nil && (b.Derived() || b.GroupID() != id) {
		old, err := a.deps.Store.GetBoard(ctx, id)
		switch {
		case errors.Is(err, rank.ErrUnknownBoard):
			err = mayReach(p, nil, b)
		case err == nil:
			err = mayReach(p, &old, b)
		}
		if err != nil {
			return err
		}
	}
	if err := a.checkHookURL(ctx, b); err != nil {
		return err
	}
	stored, err := a.deps.Store.PutBoard(ctx, b)
	if err != nil {
		return fmt.Errorf("api: put board %s: %w", id, err)
	}
	a.log.Info("api: board put", "board", id, "sub", principal(c).Member)
	if a.deps.Boards != nil {
		a.deps.Boards.BoardChanged(id, false)
	}
	return c.JSON(stored.WithoutSecrets())
}

// boardBody answers GET /api/v1/boards/{board}: the config and the number of
// members in the current period.
type boardBody struct {
	Board   rank.Board `json:"board"`
	Members int64      `json:"members"`
	State   rank.State `json:"state"`             // §6, from the store's clock
	Viewers *int       `json:"viewers,omitempty"` // §14, when Config.Viewers is set
}

func (a *API) getBoard(c *fiber.Ctx) error {
	id, err := boardParam(c)
	if err != nil {
		return err
	}
	ctx := a.ctx()
	b, err := a.deps.Store.GetBoard(ctx, id)
	if err != nil {
		return fmt.Errorf("api: get board %s: %w", id, err)
	}
	n, err := a.deps.Store.Count(ctx, id)
	if err != nil {
		return fmt.Errorf("api: count board %s: %w", id, err)
	}
	now, err := a.deps.Store.Now(ctx)
	if err != nil {
		return fmt.Errorf("api: get board %s: %w", id, err)
	}
	out := boardBody{Board: b.WithoutSecrets(), Members: n, State: b.StateAt(now)}
	if a.deps.Viewers != nil {
		v := a.deps.Viewers.Viewers(id)
		out.Viewers = &v
	}
	return c.JSON(out)
}

func (a *API) deleteBoard(c *fiber.Ctx) error {
	id, err := managedBoard(c)
	if err != nil {
		return err
	}
	if err := a.deps.Store.DeleteBoard(a.ctx(), id); err != nil {
		return fmt.Errorf("api: delete board %s: %w", id, err)
	}
	a.log.Info("api: board deleted", "board", id, "sub", principal(c).Member)
	if a.deps.Boards != nil {
		a.deps.Boards.BoardChanged(id, true)
	}
	return c.SendStatus(http.StatusNoContent)
}

// pageBody answers GET …/top and GET …/cohorts/{cohort}/top: the
// WebSocket page reply without type and id. Period is the period index
// read, present only for boards that reset; Cohort names the cohort of a
// cohort's page (§12), whose Total is the cohort's member count.
type pageBody struct {
	Board   string        `json:"board"`
	Cohort  string        `json:"cohort,omitempty"`
	Region  string        `json:"region,omitempty"` // a region's page (§17, regions.go)
	Period  int64         `json:"period,omitempty"`
	Offset  int           `json:"offset"`
	Entries []proto.Entry `json:"entries"`
	Total   int64         `json:"total"`
}

// top answers GET …/top, and a cohort's or region's page when the route
// names one.
func (a *API) top(c *fiber.Ctx) error {
	id, err := boardParam(c)
	if err != nil {
		return err
	}
	offset, err := queryInt(c, "offset", 0, 0, math.MaxInt32)
	if err != nil {
		return err
	}
	limit, err := queryInt(c, "limit", proto.DefaultLimit, 1, proto.MaxLimit)
	if err != nil {
		return err
	}
	period := rank.PeriodSel(c.Query("period"))
	cohort := c.Params("cohort") // its form is the board's (rank.Board.ParseCohortID): the store checks it
	ctx := a.ctx()
	region := c.Params("region") // §17; the store checks it (rank.CheckRegion)
	var pg rank.Page
	switch {
	case cohort != "":
		pg, err = a.deps.Store.CohortTop(ctx, id, period, cohort, offset, limit)
	case region != "":
		pg, err = a.deps.Store.RegionTop(ctx, id, period, region, offset, limit)
	default:
		pg, err = a.deps.Store.Top(ctx, id, period, offset, limit)
	}
	if err != nil {
		return fmt.Errorf("api: top %s: %w", id, err)
	}
	a.decorate(ctx, pg.Entries)
	return sendScores(c, pageBody{Board: id, Cohort: cohort, Region: region, Period: pg.Period, Offset: offset, Entries: proto.EntriesOf(pg.Entries), Total: pg.Total}, pg.Decimals)
}

// rankBody answers GET …/members/{member}: the WebSocket rank reply without
// type and id. Rank and Score are null when the member is not on the board.
type rankBody struct {
	Board  string        `json:"board"`
	Period int64         `json:"period,omitempty"`
	Member string        `json:"member"`
	Rank   *int64        `json:"rank"`
	Score  *int64        `json:"score"`
	Around []proto.Entry `json:"around"`
	// Cohort and Tier: §12, on cohort and league boards (then Rank and
	// Around are within the cohort).
	Cohort string `json:"cohort,omitempty"`
	Tier   string `json:"tier,omitempty"`
	// Region and RegionRank: §17, on region boards, when the member has
	// an entry (Rank and Around stay the board's).
	Region     string `json:"region,omitempty"`
	RegionRank int64  `json:"region_rank,omitempty"`
}

func (a *API) member(c *fiber.Ctx) error {
	id, err := boardParam(c)
	if err != nil {
		return err
	}
	m := c.Params("member")
	if err := rank.CheckMemberID(m); err != nil {
		return err
	}
	around, err := queryInt(c, "around", DefaultAround, 0, rank.MaxAround)
	if err != nil {
		return err
	}
	ctx := a.ctx()
	read := a.deps.Store.Ranks
	if p := principal(c); p.Role == auth.Admin || p.Member == m {
		b, err := a.deps.Store.Board(ctx, id)
		if err != nil {
			return fmt.Errorf("api: rank %s: %w", id, err)
		}
		if b.Holds() {
			read = a.deps.Store.SelfRanks // a held member sees itself, as admins do (§16)
		}
	}
	rs, err := read(ctx, id, rank.PeriodSel(c.Query("period")), []string{m}, around)
	if err != nil {
		return fmt.Errorf("api: rank %s: %w", id, err)
	}
	out := rankBody{Board: id, Period: rs.Period, Member: m, Around: []proto.Entry{}}
	if len(rs.Members) == 1 {
		out.Cohort, out.Tier = rs.Members[0].Cohort, rs.Members[0].Tier
	}
	if out.Tier == "" {
		// Not on the board in the period: on a league board its tier is
		// still known, the one its first event would place it in.
		if out.Tier, err = a.memberTier(ctx, id, rank.PeriodSel(c.Query("period")), m); err != nil {
			return err
		}
	}
	if len(rs.Members) == 1 && rs.Members[0].Found {
		mr := rs.Members[0]
		out.Rank, out.Score = &mr.Rank, &mr.Score
		out.Region, out.RegionRank = mr.Region, mr.RegionRank
		a.decorate(ctx, mr.Around)
		out.Around = proto.EntriesOf(mr.Around)
	}
	return sendScores(c, out, rs.Decimals)
}

// sendScores answers with v's JSON, its scores written with the board's
// decimals (hot boards, R22).
func sendScores(c *fiber.Ctx, v any, decimals int) error {
	b, err := proto.Marshal(v)
	if err != nil {
		return fmt.Errorf("api: encode: %w", err)
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(proto.Decimalize(b, decimals))
}
