package rank_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

func TestParseWebhook(t *testing.T) {
	good := `{"url":"https://hooks.example/lb","secret":"0123456789abcdef","events":["period.final"]}`
	w, err := rank.ParseWebhook("w1", []byte(good))
	if err != nil || w.ID != "w1" || w.Boards != nil || !w.Wants(rank.EventPeriodFinal, "any") || w.Wants(rank.EventBoardFinal, "any") {
		t.Fatalf("good webhook: %+v, %v", w, err)
	}
	for body, field := range map[string]string{
		`{"url":"ftp://x.example/","secret":"0123456789abcdef","events":["board.final"]}`:                  "url",
		`{"url":"https://x.example/","secret":"short","events":["board.final"]}`:                           "secret",
		`{"url":"https://x.example/","secret":"0123456789abcdef","events":[]}`:                             "events",
		`{"url":"https://x.example/","secret":"0123456789abcdef","events":["nope"]}`:                       "events",
		`{"url":"https://x.example/","secret":"0123456789abcdef","events":["board.final"],"boards":["$"]}`: "boards",
		`{"url":"https://x.example/","secret":"0123456789abcdef","events":["board.final"],"id":"w2"}`:      "id",
		`{"url":"https://x.example/","secret":"0123456789abcdef","events":["board.final"],"URL":"x"}`:      "URL",
	} {
		_, err := rank.ParseWebhook("w1", []byte(body))
		if !errors.Is(err, rank.ErrInvalidWebhook) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v, want invalid naming %s", body, err, field)
		}
	}
}

func TestBoardRewardsAndStandings(t *testing.T) {
	b, err := rank.ParseBoard("b", []byte(`{"rewards":[{"from":1,"to":1,"reward":"gold"},{"from":2,"to":10,"reward":"silver"}],"standings":5}`))
	if err != nil {
		t.Fatal(err)
	}
	if b.StandingsCount() != 5 || b.RewardFor(1) != "gold" || b.RewardFor(10) != "silver" || b.RewardFor(11) != "" || b.FinalReach() != 10 {
		t.Fatalf("parsed %+v: standings %d reach %d", b.Rewards.All(), b.StandingsCount(), b.FinalReach())
	}
	if d := rank.DefaultBoard("d"); d.StandingsCount() != rank.DefaultStandings {
		t.Fatalf("default standings %d", d.StandingsCount())
	}
	for body, field := range map[string]string{
		`{"standings":0}`:                              "standings",
		`{"standings":1001}`:                           "standings",
		`{"rewards":[{"from":2,"to":1,"reward":"x"}]}`: "rewards",
		`{"rewards":[{"from":1,"to":5,"reward":"x"},{"from":5,"to":6,"reward":"y"}]}`: "rewards",
		`{"rewards":[{"from":1,"to":1,"reward":""}]}`:                                 "rewards",
		`{"rewards":[{"from":1,"to":1,"reward":"x","extra":1}]}`:                      "rewards",
		`{"rewards":[{"from":1,"to":1001,"reward":"x"}]}`:                             "rewards",
	} {
		_, err := rank.ParseBoard("b", []byte(body))
		if !errors.Is(err, rank.ErrInvalidConfig) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v, want invalid naming %s", body, err, field)
		}
	}
}

func TestNextAttempt(t *testing.T) {
	created := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	now := created
	var gaps []time.Duration
	for a := 1; ; a++ {
		next, ok := rank.NextAttempt(created, a, now)
		if !ok {
			break
		}
		gaps = append(gaps, next.Sub(now))
		now = next
	}
	if gaps[0] != rank.RetryFirst || gaps[1] != 2*rank.RetryFirst || gaps[len(gaps)-1] != rank.RetryMax {
		t.Fatalf("gaps %v: want 5s, 10s, … up to 1h", gaps)
	}
	if now.Sub(created) >= rank.RetryFor || now.Add(rank.RetryMax).Sub(created) < rank.RetryFor {
		t.Fatalf("last attempt at +%s: want the last within 24h and none after", now.Sub(created))
	}
}
