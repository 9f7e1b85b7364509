package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/client"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/proto"
)

// Cohorts and leagues on two gateways sharing one Redis (docs/protocol.md
// §12, R27), over real 1-minute periods.
const (
	cohortSize    = 7
	cohortMembers = 60
	leaguePromote = 2
	leagueDemote  = 2
)

var leagueTiers = []string{"low", "mid", "high"}

// cohortPage is the body of GET …/cohorts/{cohort}/top.
type cohortPage struct {
	Board   string        `json:"board"`
	Cohort  string        `json:"cohort"`
	Period  int64         `json:"period"`
	Entries []proto.Entry `json:"entries"`
	Total   int64         `json:"total"`
}

// TestCohortsAndLeagueTwoNodes: 60 members placed at once through two
// nodes fill cohorts of 7 in order (8 full ones and one of 4), each member
// in exactly one, every ack carrying its cohort and tier and a rank within
// the cohort; when the minute is final the best 2 of each cohort move up a
// tier and the worst 2 down, exactly once, read through either node, and
// again after a second minute.
func TestCohortsAndLeagueTwoNodes(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	c := newCluster(t, clusterOpts{Nodes: 2})
	const board = "league"
	putBoard(t, c.nodes[0], board, map[string]any{
		"reset": "1m", "cohort": map[string]any{"size": cohortSize},
		"league": map[string]any{"tiers": leagueTiers, "promote": leaguePromote, "demote": leagueDemote},
	})
	clients := serverClients(t, 2, c.nodes[0].URL(), c.nodes[1].URL())
	members := memberIDs(cohortMembers)

	// Start at a minute's beginning, so that one minute holds each round.
	waitMinute(t)
	tiers := map[string]int{} // member → tier index; every member starts in the lowest
	for round := range 2 {
		period := placeAll(t, clients, board, members, round, tiers)
		cohorts := checkCohorts(t, c, board, period, members, tiers)
		// The next minute: the moves of this one, read through both nodes
		// without an event (the first node to touch the period applies
		// them), then again after events through both.
		waitMinute(t)
		want := map[string]int{}
		for _, cohort := range cohorts {
			for i, e := range cohort {
				step := 0
				switch {
				case i < leaguePromote:
					step = 1
				case i >= len(cohort)-leagueDemote:
					step = -1
				}
				want[e.Member] = min(max(tiers[e.Member]+step, 0), len(leagueTiers)-1)
			}
		}
		for i, m := range members {
			got := memberTier(t, c.nodes[i%2], board, m)
			if got != leagueTiers[want[m]] {
				t.Fatalf("round %d: %s is in tier %q after the minute ended, want %q (was %q)", round, m, got, leagueTiers[want[m]], leagueTiers[tiers[m]])
			}
		}
		tiers = want
	}
}

// waitMinute sleeps until the second after the next minute starts (the
// store's clock is Redis's, this machine's).
func waitMinute(t *testing.T) {
	now := time.Now()
	time.Sleep(now.Truncate(time.Minute).Add(time.Minute + time.Second).Sub(now))
}

// placeAll scores every member once, at once, half through each client,
// member i scoring i+1 (round 0) or 100-i (round 1, so that the order
// within the cohorts changes), and checks every ack: the tier the member is
// in, a cohort of that tier, a rank within a cohort. It returns the period.
func placeAll(t *testing.T, clients []*client.Client, board string, members []string, round int, tiers map[string]int) int64 {
	t.Helper()
	acks := make([]proto.Ack, len(members))
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			d := int64(i + 1)
			if round == 1 {
				d = int64(100 - i)
			}
			acks[i], errs[i] = clients[i%2].Score(ctx, client.ScoreReq{Board: board, Member: m, Delta: &d, ID: fmt.Sprintf("r%d-%s", round, m)})
		})
	}
	wg.Wait()
	period := acks[0].Period
	for i, a := range acks {
		if errs[i] != nil {
			t.Fatalf("round %d: score of %s: %v", round, members[i], errs[i])
		}
		tier := leagueTiers[tiers[members[i]]]
		if a.Period != period {
			t.Fatalf("round %d: acks in periods %d and %d: the round crossed a minute", round, period, a.Period)
		}
		if a.Tier != tier || !cohortOfTier(a.Cohort, tier) || a.Rank < 1 || a.Rank > cohortSize {
			t.Fatalf("round %d: ack of %s = cohort %q tier %q rank %d; want a cohort of tier %q and a rank within 1..%d", round, members[i], a.Cohort, a.Tier, a.Rank, tier, cohortSize)
		}
	}
	return period
}

func cohortOfTier(cohort, tier string) bool {
	n, ok := strings.CutPrefix(cohort, tier+"-")
	v, err := strconv.Atoi(n)
	return ok && err == nil && v >= 1
}

// checkCohorts reads every cohort of period through alternate nodes and
// checks R27: each member in exactly one cohort, of its tier; no cohort over
// the size; cohorts of a tier filled in order (all full but the last). It
// returns the cohorts, each ranked best first.
func checkCohorts(t *testing.T, c *cluster, board string, period int64, members []string, tiers map[string]int) [][]proto.Entry {
	t.Helper()
	seen := map[string]string{} // member → cohort
	var out [][]proto.Entry
	for ti, tier := range leagueTiers {
		inTier := 0
		for _, m := range members {
			if tiers[m] == ti {
				inTier++
			}
		}
		placed := 0
		for n := 1; ; n++ {
			id := tier + "-" + strconv.Itoa(n)
			var p cohortPage
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			st, body, err := rest(ctx, "GET", fmt.Sprintf("%s/api/v1/boards/%s/cohorts/%s/top?limit=100&period=%d", c.nodes[n%2].HTTP(), board, id, period), adminToken(t), nil, &p)
			cancel()
			if err != nil || st != 200 {
				t.Fatalf("cohort %s of period %d: %d %s %v", id, period, st, body, err)
			}
			if p.Total == 0 {
				break
			}
			if p.Cohort != id || p.Total != int64(len(p.Entries)) || p.Total > cohortSize {
				t.Fatalf("cohort %s of period %d: cohort %q, %d entries, total %d; at most %d", id, period, p.Cohort, len(p.Entries), p.Total, cohortSize)
			}
			if placed+int(p.Total) < inTier && p.Total != cohortSize {
				t.Fatalf("cohort %s of period %d holds %d before the tier's last cohort: cohorts fill in order", id, period, p.Total)
			}
			for i, e := range p.Entries {
				if prev, dup := seen[e.Member]; dup {
					t.Fatalf("%s is in cohorts %s and %s of period %d", e.Member, prev, id, period)
				}
				seen[e.Member] = id
				if tiers[e.Member] != ti {
					t.Fatalf("%s (tier %s) is in cohort %s", e.Member, leagueTiers[tiers[e.Member]], id)
				}
				if e.Rank != int64(i+1) {
					t.Fatalf("cohort %s: entry %d has rank %d", id, i, e.Rank)
				}
			}
			placed += int(p.Total)
			out = append(out, p.Entries)
		}
		if placed != inTier {
			t.Fatalf("tier %s of period %d: %d members in its cohorts, want %d", tier, period, placed, inTier)
		}
	}
	for _, m := range members {
		if _, ok := seen[m]; !ok {
			t.Fatalf("period %d: %s is in no cohort", period, m)
		}
	}
	return out
}

// memberTier is GET …/members/{member}'s tier through node g.
func memberTier(t *testing.T, g *gateway, board, member string) string {
	t.Helper()
	var body struct {
		Cohort string `json:"cohort"`
		Tier   string `json:"tier"`
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, b, err := rest(ctx, "GET", g.HTTP()+"/api/v1/boards/"+board+"/members/"+member, adminToken(t), nil, &body)
	if err != nil || st != 200 {
		t.Fatalf("member %s: %d %s %v", member, st, b, err)
	}
	if body.Cohort != "" {
		t.Fatalf("member %s is in cohort %q of a period it has not scored in", member, body.Cohort)
	}
	return body.Tier
}
