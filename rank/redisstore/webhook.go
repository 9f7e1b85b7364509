package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/rank"
)

// The outbox (rank.Outbox, R28) lives under one hash tag, so each of its
// scripts runs on one Cluster slot; webhook events are rare next to scores,
// so one slot carries them:
//
//	<p>:{wh}:hooks          hash: webhook id -> its JSON (secret included)
//	<p>:{wh}:due            sorted set: pending delivery id -> next attempt or lease end (ms)
//	<p>:{wh}:d:<id>         hash: w (webhook), body (the static fields' JSON), status, attempts, err, next, created, token
//	<p>:{wh}:log:<webhook>  list: delivery ids, newest first, at most rank.DeliveryLog
//	<p>:{wh}:m:<marker>     string: the marker of a fact appended (AppendOutbox): when it lapses, ms
//
// A delivery that is delivered or failed expires deliveryKeep later; its
// id stays in the log until pushed out, and a listing skips what expired.

var _ rank.Outbox = (*Store)(nil)

const deliveryKeep = 7 * 24 * time.Hour

func (s *Store) whKey(parts ...string) string {
	k := s.cfg.Prefix + ":{wh}"
	for _, p := range parts {
		k += ":" + p
	}
	return k
}

// appendScript: KEYS[1] marker, KEYS[2] due, then per delivery its hash
// and its webhook's log. ARGV[1] keep ms (0: for good), ARGV[2] now ms,
// ARGV[3] the static fields' JSON, then per delivery its webhook and id.
// The marker holds when it lapses on the store clock (0: never), which
// decides; its PX only frees the key.
var appendScript = redis.NewScript(`
local was = redis.call('GET', KEYS[1])
if was and (was == '0' or tonumber(was) > tonumber(ARGV[2])) then return 0 end
if tonumber(ARGV[1]) > 0 then
  redis.call('SET', KEYS[1], tonumber(ARGV[2]) + tonumber(ARGV[1]), 'PX', ARGV[1])
else
  redis.call('SET', KEYS[1], '0')
end
local n = 0
for i = 3, #KEYS, 2 do
  local w, id = ARGV[4 + n * 2], ARGV[5 + n * 2]
  redis.call('HSET', KEYS[i], 'w', w, 'body', ARGV[3], 'status', 'pending', 'attempts', 0,
    'err', '', 'next', ARGV[2], 'created', ARGV[2], 'token', '')
  redis.call('ZADD', KEYS[2], ARGV[2], id)
  redis.call('LPUSH', KEYS[i + 1], id)
  redis.call('LTRIM', KEYS[i + 1], 0, ` + strconv.Itoa(rank.DeliveryLog-1) + `)
  n = n + 1
end
return 1`)

// leaseScript: KEYS[1] due, KEYS[2] hooks. ARGV[1] now ms, ARGV[2] lease
// end ms, ARGV[3] token, ARGV[4] the delivery keys' prefix. It returns the
// delivery's fields and its webhook's JSON, or nil when nothing is due. A
// delivery whose webhook or hash is gone leaves the queue.
var leaseScript = redis.NewScript(`
for _ = 1, 16 do
  local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, 1)
  if #ids == 0 then return false end
  local id = ids[1]
  local k = ARGV[4] .. id
  local w = redis.call('HGET', k, 'w')
  local hook = w and redis.call('HGET', KEYS[2], w)
  if not hook then
    redis.call('ZREM', KEYS[1], id)
    redis.call('DEL', k)
  else
    redis.call('ZADD', KEYS[1], ARGV[2], id)
    redis.call('HSET', k, 'token', ARGV[3])
    return {id, hook, redis.call('HGETALL', k)}
  end
end
return false`)

// recordScript: KEYS[1] due, KEYS[2] the delivery. ARGV[1] id, ARGV[2]
// token, ARGV[3] status, ARGV[4] attempts, ARGV[5] err, ARGV[6] next ms
// (0 when final), ARGV[7] keep ms once final. 0 when the token no longer
// holds the lease.
var recordScript = redis.NewScript(`
if redis.call('HGET', KEYS[2], 'token') ~= ARGV[2] or redis.call('HGET', KEYS[2], 'status') ~= 'pending' then
  return 0
end
redis.call('HSET', KEYS[2], 'status', ARGV[3], 'attempts', ARGV[4], 'err', ARGV[5], 'next', ARGV[6], 'token', '')
if ARGV[3] == 'pending' then
  redis.call('ZADD', KEYS[1], ARGV[6], ARGV[1])
else
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('PEXPIRE', KEYS[2], ARGV[7])
end
return 1`)

// deliveryBody is the part of a delivery fixed when it is appended.
type deliveryBody struct {
	Event string          `json:"event"`
	Board string          `json:"board"`
	TS    int64           `json:"ts"`
	Data  json.RawMessage `json:"data"`
}

func (s *Store) PutWebhook(ctx context.Context, w rank.Webhook) (rank.Webhook, error) {
	if err := w.Validate(); err != nil {
		return rank.Webhook{}, fmt.Errorf("redisstore: put webhook: %w", err)
	}
	if s.closed.Load() {
		return rank.Webhook{}, ErrClosed
	}
	b, err := json.Marshal(w)
	if err != nil {
		return rank.Webhook{}, fmt.Errorf("redisstore: put webhook %s: %w", w.ID, err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	if err := s.client.HSet(ctx, s.whKey("hooks"), w.ID, b).Err(); err != nil {
		return rank.Webhook{}, s.fail("put webhook", "", err)
	}
	return w, nil
}

func (s *Store) GetWebhook(ctx context.Context, id string) (rank.Webhook, error) {
	if s.closed.Load() {
		return rank.Webhook{}, ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	v, err := s.client.HGet(ctx, s.whKey("hooks"), id).Result()
	if errors.Is(err, redis.Nil) {
		return rank.Webhook{}, fmt.Errorf("redisstore: webhook %s: %w", id, rank.ErrNoWebhook)
	}
	if err != nil {
		return rank.Webhook{}, s.fail("get webhook", "", err)
	}
	var w rank.Webhook
	if err := json.Unmarshal([]byte(v), &w); err != nil {
		return rank.Webhook{}, fmt.Errorf("redisstore: webhook %s: %w", id, err)
	}
	return w, nil
}

func (s *Store) Webhooks(ctx context.Context) ([]rank.Webhook, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	all, err := s.client.HGetAll(ctx, s.whKey("hooks")).Result()
	if err != nil {
		return nil, s.fail("webhooks", "", err)
	}
	out := make([]rank.Webhook, 0, len(all))
	for id, v := range all {
		var w rank.Webhook
		if err := json.Unmarshal([]byte(v), &w); err != nil {
			return nil, fmt.Errorf("redisstore: webhook %s: %w", id, err)
		}
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// DeleteWebhook removes the webhook, its log and the deliveries the log
// names; a pending delivery already pushed out of the log leaves the queue
// when next leased (leaseScript).
func (s *Store) DeleteWebhook(ctx context.Context, id string) error {
	if s.closed.Load() {
		return ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	n, err := s.client.HDel(ctx, s.whKey("hooks"), id).Result()
	if err != nil {
		return s.fail("delete webhook", "", err)
	}
	if n == 0 {
		return fmt.Errorf("redisstore: delete webhook %s: %w", id, rank.ErrNoWebhook)
	}
	log := s.whKey("log", id)
	ids, err := s.client.LRange(ctx, log, 0, -1).Result()
	if err != nil {
		return s.fail("delete webhook", "", err)
	}
	_, err = s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for _, d := range ids {
			p.Del(ctx, s.whKey("d", d))
			p.ZRem(ctx, s.whKey("due"), d)
		}
		p.Del(ctx, log)
		return nil
	})
	if err != nil {
		return s.fail("delete webhook", "", err)
	}
	return nil
}

func (s *Store) AppendOutbox(ctx context.Context, marker string, keep time.Duration, ev rank.OutboxEvent) (bool, error) {
	hooks, err := s.Webhooks(ctx)
	if err != nil {
		return false, err
	}
	body, err := json.Marshal(deliveryBody{Event: ev.Event, Board: ev.Board, TS: ev.TS.UnixMilli(), Data: ev.Data})
	if err != nil {
		return false, fmt.Errorf("redisstore: append outbox: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	now := s.clock.now(ctx, s.client)
	keys := []string{s.whKey("m", marker), s.whKey("due")}
	args := []any{keep.Milliseconds(), now.UnixMilli(), body}
	for _, w := range hooks {
		if !w.Wants(ev.Event, ev.Board) {
			continue
		}
		id := newDeliveryID()
		keys = append(keys, s.whKey("d", id), s.whKey("log", w.ID))
		args = append(args, w.ID, id)
	}
	v, err := appendScript.Run(ctx, s.client, keys, args...).Int()
	if err != nil {
		return false, s.fail("append outbox", ev.Board, err)
	}
	return v == 1, nil
}

func (s *Store) LeaseDelivery(ctx context.Context, token string, lease time.Duration) (rank.Delivery, rank.Webhook, bool, error) {
	if s.closed.Load() {
		return rank.Delivery{}, rank.Webhook{}, false, ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	now := s.clock.now(ctx, s.client)
	v, err := leaseScript.Run(ctx, s.client, []string{s.whKey("due"), s.whKey("hooks")},
		now.UnixMilli(), now.Add(lease).UnixMilli(), token, s.whKey("d")+":").Slice()
	if errors.Is(err, redis.Nil) {
		return rank.Delivery{}, rank.Webhook{}, false, nil
	}
	if err != nil {
		return rank.Delivery{}, rank.Webhook{}, false, s.fail("lease delivery", "", err)
	}
	if len(v) != 3 {
		return rank.Delivery{}, rank.Webhook{}, false, fmt.Errorf("redisstore: lease delivery: a reply of %d parts, want 3", len(v))
	}
	id, _ := v[0].(string)
	hookJSON, _ := v[1].(string)
	var w rank.Webhook
	if err := json.Unmarshal([]byte(hookJSON), &w); err != nil {
		return rank.Delivery{}, rank.Webhook{}, false, fmt.Errorf("redisstore: lease delivery %s: %w", id, err)
	}
	fields, _ := v[2].([]any)
	h := map[string]string{}
	for i := 0; i+1 < len(fields); i += 2 {
		k, _ := fields[i].(string)
		val, _ := fields[i+1].(string)
		h[k] = val
	}
	d, err := deliveryOf(id, h)
	if err != nil {
		return rank.Delivery{}, rank.Webhook{}, false, err
	}
	return d, w, true, nil
}

func (s *Store) RecordAttempt(ctx context.Context, id, token, errText string) (bool, error) {
	if s.closed.Load() {
		return false, ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	key := s.whKey("d", id)
	h, err := s.client.HGetAll(ctx, key).Result()
	if err != nil {
		return false, s.fail("record attempt", "", err)
	}
	if h["token"] != token || h["status"] != rank.DeliveryPending {
		return false, nil // the lease ended and another node holds it
	}
	d, err := deliveryOf(id, h)
	if err != nil {
		return false, err
	}
	now := s.clock.now(ctx, s.client)
	attempts := d.Attempts + 1
	status, next := rank.DeliveryDelivered, int64(0)
	if errText != "" {
		if t, ok := rank.NextAttempt(d.Created, attempts, now); ok {
			status, next = rank.DeliveryPending, t.UnixMilli()
		} else {
			status = rank.DeliveryFailed
		}
	}
	v, err := recordScript.Run(ctx, s.client, []string{s.whKey("due"), key},
		id, token, status, attempts, errText, next, deliveryKeep.Milliseconds()).Int()
	if err != nil {
		return false, s.fail("record attempt", "", err)
	}
	return v == 1, nil
}

func (s *Store) Deliveries(ctx context.Context, webhook string) ([]rank.Delivery, error) {
	if _, err := s.GetWebhook(ctx, webhook); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	ids, err := s.client.LRange(ctx, s.whKey("log", webhook), 0, rank.DeliveryLog-1).Result()
	if err != nil {
		return nil, s.fail("deliveries", "", err)
	}
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	_, err = s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, s.whKey("d", id))
		}
		return nil
	})
	if err != nil {
		return nil, s.fail("deliveries", "", err)
	}
	out := make([]rank.Delivery, 0, len(ids))
	for i, id := range ids {
		h := cmds[i].Val()
		if len(h) == 0 {
			continue // expired after it ended
		}
		d, err := deliveryOf(id, h)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// deliveryOf reads a delivery's hash.
func deliveryOf(id string, h map[string]string) (rank.Delivery, error) {
	var b deliveryBody
	if err := json.Unmarshal([]byte(h["body"]), &b); err != nil {
		return rank.Delivery{}, fmt.Errorf("redisstore: delivery %s: %w", id, err)
	}
	ms := func(k string) time.Time {
		v, _ := strconv.ParseInt(h[k], 10, 64)
		if v == 0 {
			return time.Time{}
		}
		return time.UnixMilli(v)
	}
	attempts, _ := strconv.Atoi(h["attempts"])
	return rank.Delivery{
		ID: id, Webhook: h["w"], Event: b.Event, Board: b.Board, TS: time.UnixMilli(b.TS), Data: b.Data,
		Created: ms("created"), Status: h["status"], Attempts: attempts, LastError: h["err"], NextAttemptAt: ms("next"),
	}, nil
}

// newDeliveryID is a random id: receivers dedupe by it (R28), so it must
// not repeat across nodes or restarts.
func newDeliveryID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}
