-- apply.lua: apply N score events to one board, in order, each atomically
-- and idempotently as if it were alone: one script call per board per
-- pipeline instead of one per event (N >= 1).
--
-- KEYS[1]    <p>:{b}:cfg     hash: v = config version, j = config JSON,
--            a = the apply config (below), me = "1" once any event wrote
--            meta, sh = "1" once a config with tiebreak shared was stored,
--            and prelude's record fields rw, rs, ro, rb
-- KEYS[2]    <p>:{b}:seq     string: the board's change sequence
-- KEYS[3]    <p>:{b}:n       hash: member id -> display name
-- KEYS[4]    <p>:{b}:z:<A>   sorted set of period slot A
-- KEYS[5]    <p>:{b}:m:<A>   hash: member id -> sorted-set member (first/last), slot A
-- KEYS[6]    <p>:{b}:z:<B>   sorted set of period slot B (the period after A)
-- KEYS[7]    <p>:{b}:m:<B>   hash of slot B
-- KEYS[8]    <p>:{b}:z:<P>   sorted set of period slot P (the period before A:
--            late events within grace, R17)
-- KEYS[9]    <p>:{b}:m:<P>   hash of slot P
--            (a board without periods passes its one period's keys as A, B and P)
-- KEYS[10]   <p>:{b}:ban     hash: the board's bans (see ban.lua; R21)
-- KEYS[11]   <p>:{b}:guard   a key never written: on Redis Cluster a call
--            that names a missing key never runs while its slot migrates
--            (rank/redisstore/cluster.go)
--            then a block's keys (derived boards: see apply_derived.lua).
--            The idempotency records are fields "<m>|<id>" (member m's
--            request id; R4 v1.1) of the bucket hashes <p>:{b}:r:<W>.<k>
--            (prelude's records). Blocks build their own keys from P, the
--            prefix "<p>:{b}:" of KEYS[1] (same hash tag), each listed in
--            its file's header.
--
-- ARGV[1]  config version the caller validated the events against
-- ARGV[2]  now in unix ms, or "" to read the server's TIME (the one clock)
-- ARGV[3]  start of slot A (unix ms) = end of P
-- ARGV[4]  boundary: end of A = start of B (unix ms); 0 = no periods, always A
-- ARGV[5]  end of slot B (unix ms)
-- ARGV[6]  period index of A
-- ARGV[7]  period index of B
-- ARGV[8]  expiry time of A's keys (unix ms on the clock of ARGV[2]; 0 = never)
-- ARGV[9]  expiry time of B's keys
-- ARGV[10] start of slot P (unix ms)
-- ARGV[11] period index of P
-- ARGV[12] expiry time of P's keys
-- then eight per event i, at j = 12 + 8*(i-1):
-- ARGV[j+1] member id
-- ARGV[j+2] display name ("" keeps the stored one)
-- ARGV[j+3] op: 1 = delta, 2 = value
-- ARGV[j+4] amount, a decimal integer within +-(2^53-1)
-- ARGV[j+5] "<payload hash>.<attempt token>" (opaque here; the caller compares the
--           hash for conflicts and the token to tell its own write from a duplicate)
-- ARGV[j+6] the event's time `at` in unix ms, "" = the clock; or "r<ms>":
--           an import into the past period in slot P (§18; the caller
--           checked it with rank.Board.Restore), at that time, outside R17
-- ARGV[j+7] the event's request id
-- ARGV[j+8] the event's meta, a JSON object, "" = none
-- then a block's arguments (derived boards), and last two counts:
-- ARGV[#ARGV-1] DA, the blocks' arguments before these two ("0" = none)
-- ARGV[#ARGV]   DK, the blocks' keys after KEYS[11] ("0" = none)
--
-- The apply config (cfg field a, rank/redisstore/spec.go) is what the
-- events are applied by, stored with the config version the call checks:
-- "<mode> <order> <tiebreak> <window ms>", then a token per optional
-- feature the board uses, " <name>" or " <name>=<value>", e.g.
-- "incr desc first 600000 ends=1767225600000 grace=60000 limit=5". The
-- core reads starts, ends and grace (R17: unix ms, ms); a block reads its
-- own token (opt.<name>).
--
-- Returns one string: the events' replies in order, joined by "\n" (one
-- bulk reply rather than an array of N, cheaper to build and to read; no
-- reply contains "\n"). Each is "0" .. record when it was applied,
-- "1" .. record when its id was already applied (nothing changed), or
-- "!" .. code when it failed, where record is
-- "hash.token,score,rank,prev_rank,prev_score,seq,period" (rank 0 when
-- the ranks were not read, ranked below: prev_rank is then -1 for a member
-- that had an entry, 0 for a new one) followed by the blocks' fields, each "," and a value: a value that starts with a digit
-- is a cohort (apply_cohort.lua), one that starts with a letter is another
-- block's, tagged by that letter (g: a region, apply_region.lua). An
-- applied event's reply may go on with a block's tail (a shard's:
-- apply_shard.lua; a region board's move: apply_region.lua) after the
-- record. Codes:
-- invalid_score, bad_request, out_of_range, board_closed:<reason> (R30:
-- not_started, ended or period_over), at_ahead, banned, and the blocks'
-- (limit_reached: apply_limit.lua); that event changed nothing; the next
-- ones still run. A refusal of the whole call is an error reply
-- "LB <code>": unknown_board, stale (the config version changed), nospec
-- (a config stored without its apply config: the caller writes it and
-- sends again), clock (now is outside slots A and B), expired (a ban's
-- until has passed: ban.lua must lift it first), bad_request (the board
-- arguments); it writes nothing. The clock is read once per call. A
-- redis.call that fails part way (only a key of the wrong type can) makes
-- the call answer its error after the events before it were written with
-- their records (prelude's runEvents).
--
-- R21: a member with a record in the ban hash (the board's own or its copy
-- of a global one) gets banned, checked after the duplicate check: a retry
-- of an event applied before the ban still gets its first result, changing
-- nothing. Every record present is live: one past its until makes the whole
-- call answer expired, so the check costs one EXISTS per call when the
-- board has no bans and one HMGET per event when it has.
--
-- R17, per event (rank.Board.Admit is the same rule in Go): its time t is
-- `at` or the clock; it is refused (board_closed) unless t is in
-- [starts_at, ends_at), its period is the current one (the slot the clock is
-- in) or the one just before, and the clock is before that period's end (the
-- board's end when that comes first) plus grace. It is applied to the slot
-- that contains t.
--
-- Each event's rank and score are read right after its own step (R3): the
-- events of a call run one after the other, exactly as N calls in a row.
--
-- Sorted-set scores are the plain integer score, negated on asc boards so
-- every read uses the REV commands. Ties: first -> "<16 digits of inverted
-- seq>|<member>", last -> "<16 digits of seq>|<member>", shared -> "<member>"
-- ('|' never occurs in a member id, so the form is unambiguous).
--
-- Blocks. This file is the step every event takes on a plain board; each
-- optional feature is a block in a file of its own, apply_<feature>.lua,
-- which lua.Source puts in where the line "-- @blocks" stands below, in
-- file name order. A block is one `if <condition> then ... end` (its token
-- in the apply config, usually), so a board without the feature runs none
-- of it, not even its closures; it joins the event step by appending
-- functions to the lists of `on`:
--   on.record(i, rec) -> reply|nil  (one block at most) in place of the
--                               duplicate check: rec is event i's record
--                               (false: none); a reply answers the event
--                               (a duplicate's is "1" .. rec), nil goes on;
--                               a block with other hooks may set it during
--                               the call, for the events after;
--   on.admit[k](e) -> code|nil  after the core admitted the event (R17, and
--                               its duplicate and ban checks), before the
--                               score is computed: a code refuses it ("!"
--                               .. code, nothing written), or the hook may
--                               change e.amount, which the step then uses,
--                               and e.sl, the slot table whose keys it
--                               writes (the same idx, exp, from and to);
--   on.score[k](e) -> code|nil  once the new score is known and the
--                               previous rank read (e.had, e.old, e.new,
--                               e.olds, e.oldz, e.prev), before any write,
--                               unless the score is below scoreMin:
--                               a code refuses it (nothing written by the
--                               core; the hook's own writes stay);
--   on.write[k](e)              after the event's entry is written and its
--                               ranks read, before its record: a hook may
--                               change e.rank and e.prev (what the record
--                               and the ack say), append ",<field>" to
--                               e.extra (the record's block fields) and
--                               set e.tail (the reply's, after the record);
--   on.finish[k]()              once after every event of the call, each
--                               under its own pcall, before the records.
-- e is one table per call, filled for an event when a hook sees it:
-- i, member, name, op, amount, t (its time), id, meta, s (its slot: 0 = P,
-- 1 = A, 2 = B) and sl (slots[s]: z, m, idx, exp, from, to); for on.write
-- also had, old, new, ns (new as a decimal string), changed (the entry
-- moved), oldz, olds (the old stored score, a string), newz, rank, prev,
-- seq. A block may also use the core's locals declared before "-- @blocks"
-- (call, fmt, now, P, slots, cf, opt, mode, order, desc, tie, B and the
-- prelude's batch functions, R) and replace nextSeq (the event's seq and
-- tie key), ranked (false: rank and prev are not read, and stay 0) and
-- scoreMin (below it, on.score is not run for an event of the clock's
-- slot, cur), and set wouldRank for the blocks after it. A
-- hook's own writes go in its event's step; writes of hash fields may
-- wait in B (prelude's batches), which is written after the events, before
-- the records.

local MAX = 9007199254740991
-- The per-event path below runs tens of thousands of times a second on
-- Redis's one core, where the script's own Lua work (string.format above
-- all) costs about as much as its commands (docs/performance.md, "Redis
-- instructions per event"): it keeps what it calls in locals, formats
-- numbers with few string.format calls, makes few strings, and leaves the
-- optional features to blocks a plain board never enters.
local call, fmt, sfind = redis.call, string.format, string.find

-- ---- the call: config, clock, records ----
-- The config version check (prelude's refused), the apply config and the
-- records' fields (prelude's recordsOpen), in one call.
local cf = call('HMGET', KEYS[1], 'v', 'rw', 'rs', 'ro', 'rb', 'a', 'me', 'sh')
if not cf[1] then return redis.error_reply('LB unknown_board') end
if cf[1] ~= ARGV[1] then return redis.error_reply('LB stale') end
if not cf[6] then return redis.error_reply('LB nospec') end
local mode, order, tie, window, more = string.match(cf[6], '^(%l+) (%l+) (%l+) (%d+)(.*)$')
local opt = {}
if more and more ~= '' then
  for k, v in string.gmatch(more, ' (%l+)=?([^ ]*)') do opt[k] = v end
end
window = tonumber(window)
local startsAt, endsAt, grace = tonumber(opt.starts), tonumber(opt.ends), tonumber(opt.grace or '0')
local dk, da = tonumber(ARGV[#ARGV]), tonumber(ARGV[#ARGV - 1])
if not dk or not da then return redis.error_reply('LB bad_request') end
local n = (#ARGV - 14 - da) / 8
if (mode ~= 'incr' and mode ~= 'best' and mode ~= 'set')
  or (order ~= 'desc' and order ~= 'asc')
  or (tie ~= 'first' and tie ~= 'last' and tie ~= 'shared')
  or not window or window < 1 or not grace or grace < 0
  or (opt.starts and not startsAt) or (opt.ends and not endsAt)
  or n < 1 or n % 1 ~= 0 or #KEYS ~= 11 + dk then
  return redis.error_reply('LB bad_request')
end
local desc = order == 'desc'
local wantOp = mode == 'incr' and '1' or '2'
local P = string.sub(KEYS[1], 1, -4) -- KEYS[1] ends in "cfg"

-- The period slots: 0 = P, 1 = A, 2 = B (see the header).
local boundary = tonumber(ARGV[4])
local slots = {
  [0] = {z = KEYS[8], m = KEYS[9], from = tonumber(ARGV[10]), to = tonumber(ARGV[3]), idx = ARGV[11], exp = tonumber(ARGV[12])},
  [1] = {z = KEYS[4], m = KEYS[5], from = tonumber(ARGV[3]), to = boundary, idx = ARGV[6], exp = tonumber(ARGV[8])},
  [2] = {z = KEYS[6], m = KEYS[7], from = boundary, to = tonumber(ARGV[5]), idx = ARGV[7], exp = tonumber(ARGV[9])},
}
-- gated: an event's time needs more than the at_ahead check (admit).
local gated = boundary > 0 or startsAt ~= nil or endsAt ~= nil

-- The clock is read once per call (the records' bucket depends on it).
local bkey = KEYS[10]
local bans = call('EXISTS', bkey) == 1
local now, cur = clockMs(), 1
if boundary > 0 then
  if now < slots[1].from or now >= slots[2].to then return redis.error_reply('LB clock') end
  if now >= boundary then cur = 2 end
end
if bans and banDue(bkey, now) then return redis.error_reply('LB expired') end

local R = recordsOpen(cf, window, now, 12, 8, n)
local Rw, Rf, Rg, Rp = R.written, R.fields, R.got, R.gotp

-- The call's writes of hash fields (prelude's batch B): the names, and
-- the member hash of the clock's slot (where nearly every event lands).
-- That member hash is read for every event of the call with one HMGET;
-- what this call sets in it after is in pmw (false: deleted), so each
-- event still reads it as it is after the events before it. Another slot's
-- member hash is read and written per event.
local B = batchNew()
local pm = slots[cur].m
local pmw = {}
B.vals[pm], B.keys[1] = pmw, pm
local pmv
do
  local ms = {}
  for i = 1, n do ms[i] = ARGV[12 + 8 * (i - 1) + 1] end
  pmv = call('HMGET', pm, unpack(ms))
end
-- A member absent from the member hash may still have a raw "<member>"
-- entry: tiebreak shared writes one, and a board that was ever shared
-- (cfg field sh) may hold some in this period.
local rawToo = tie == 'shared' or cf[8] ~= false

-- admit is R17 for an event of time t on a gated board: the slot it is
-- applied to, or nil and the refusal's code; board_closed carries its
-- reason (R30), whose times the caller reads from the config
-- (rank.Board.Closed).
local function admit(t)
  if t > now + 5000 then return nil, 'at_ahead' end
  if startsAt and t < startsAt then return nil, 'board_closed:not_started' end
  if endsAt and t >= endsAt then return nil, 'board_closed:ended' end
  local s, ends = 1, nil
  if boundary > 0 then
    s = nil
    for k = 0, 2 do
      if t >= slots[k].from and t < slots[k].to then s = k end
    end
    if s and s > cur then return nil, 'board_closed:not_started' end
    if t >= slots[2].to then return nil, 'board_closed:not_started' end
    if not s or s ~= cur and s ~= cur - 1 then return nil, 'board_closed:period_over' end
    ends = slots[s].to
  end
  if endsAt and (not ends or endsAt <= ends) then
    if now >= endsAt + grace then return nil, 'board_closed:ended' end
  elseif ends and now >= ends + grace then
    return nil, 'board_closed:period_over'
  end
  return s
end

-- The board's seq (KEYS[2]) is read once per call, counted here, and
-- written once at the end when more than one event took a value (an INCR
-- for the first event, a SET at the end for the others, instead of an INCR
-- per event). Nothing else runs between the events of a call, and the
-- SET runs (runEvents' finish) even when an event failed part way.
local seqLast, seqDirty = nil, false

-- nextSeq is the event's seq, and its tie key on first/last boards: the
-- board's next change sequence (a block may replace it: apply_shard.lua).
local nextSeq = function()
  if not seqLast then
    seqLast = call('INCR', KEYS[2])
  else
    seqLast, seqDirty = seqLast + 1, true
  end
  return seqLast
end
-- ranked: the step reads the event's rank and previous rank (a block may
-- turn it off: apply_shard.lua).
local ranked = true
-- scoreMin: an event of the clock's slot whose new score's goodness (the
-- score, negated on asc boards) is below it gives on.score nothing to do,
-- and the hooks are not run for it (a block sets it; nil: always run).
local scoreMin
-- wouldRank(z, sc, zm): the rank sorted-set member zm of stored score sc
-- would have in sorted set z, where it is not (apply_hold.lua sets it).
local wouldRank

-- The hooks blocks join the step with, and the event they see.
local on = {admit = {}, score = {}, write = {}, finish = {}}
local e = {}

-- @blocks

local onAdmit, onScore, onWrite = on.admit, on.score, on.write
local nAdmit, nScore, nWrite = #onAdmit, #onScore, #onWrite

-- The first 8 digits of tiebreak first's pad, and the seq / 1e8 they are of.
local padHi, padHiOf
-- Slots whose keys this call already gave their expiry.
local expired = {}

-- see fills e with event i's fields for the hooks, once per event (the
-- first hook that sees it), and returns true.
local function see(i, j, member, amount, t, s, sl)
  e.i, e.member, e.name, e.op, e.amount, e.t, e.id, e.meta, e.s, e.sl =
    i, member, ARGV[j + 2], ARGV[j + 3], amount, t, ARGV[j + 7], ARGV[j + 8], s, sl
  e.extra, e.tail = nil, nil
  return true
end

-- one applies event i and returns its reply string.
local function one(i)
  local j = 12 + 8 * (i - 1)
  local member = ARGV[j + 1]
  local rec = Rw[Rf[i]] or Rg[i] or Rp[i]
  if not rec and R.oldCur then rec = recordGet(R, i) end
  local onRecord = on.record
  if onRecord then
    local reply = onRecord(i, rec)
    if reply then return reply end
  elseif rec then
    return '1' .. rec
  end
  if bans then
    local r = call('HMGET', bkey, member, 'g|' .. member)
    if r[1] or r[2] then return '!banned' end
  end

  local amount = tonumber(ARGV[j + 4])
  if not amount or amount % 1 ~= 0 or amount > MAX or amount < -MAX then
    return '!invalid_score'
  end
  if ARGV[j + 3] ~= wantOp or member == '' or sfind(member, '|', 1, true) then
    return '!bad_request'
  end
  local t, s = now, 1
  local into = false
  if ARGV[j + 6] ~= '' then
    t = tonumber(ARGV[j + 6])
    if not t then
      -- "r<ms>": an admin's import into the past period the caller put
      -- in slot P (§18), written at that time, outside R17.
      t = tonumber(string.match(ARGV[j + 6], '^r(%d+)$') or '')
      if not t then return '!bad_request' end
      into, s = true, 0
    end
  end
  if into then
    -- (rank.Board.Restore checked the period and the schedule.)
  elseif gated then
    local code
    s, code = admit(t)
    if not s then return '!' .. code end
  elseif t > now + 5000 then
    return '!at_ahead'
  end
  local sl = slots[s]
  -- e is filled only for an event a hook sees (seen).
  local seen = false
  if nAdmit > 0 then
    seen = see(i, j, member, amount, t, s, sl)
    for k = 1, nAdmit do
      local code = onAdmit[k](e)
      if code then return '!' .. code end
    end
    amount, sl = e.amount, e.sl
  end
  local zkey, mkey = sl.z, sl.m

  -- The member's entry: its sorted-set member oldz and stored score olds.
  local oldz
  if mkey == pm then
    oldz = pmw[member]
    if oldz == nil then oldz = pmv[i] end
  else
    oldz = call('HGET', mkey, member)
  end
  local olds = false
  if oldz then
    olds = call('ZSCORE', zkey, oldz)
  else
    oldz = member
    if rawToo then olds = call('ZSCORE', zkey, member) end
  end
  local had = olds ~= false
  local old = 0
  if had then
    old = tonumber(olds)
    if not desc then old = -old end
  end

  local new = amount
  if mode == 'incr' then
    if had then new = old + amount end
  elseif mode == 'best' and had then
    if (desc and amount <= old) or (not desc and amount >= old) then new = old end
  end
  -- Exact: |old|, |amount| <= 2^53-1, so a true sum beyond the range rounds
  -- to a double that is still beyond it.
  if new > MAX or new < -MAX then return '!out_of_range' end

  local prev = 0
  if had then
    if not ranked then
      prev = -1 -- not read (the header's record)
    elseif tie == 'shared' then
      prev = call('ZCOUNT', zkey, '(' .. olds, '+inf') + 1
    else
      prev = call('ZREVRANK', zkey, oldz) + 1
    end
  end

  if nScore > 0 and (s ~= cur or not scoreMin or (desc and new or -new) >= scoreMin) then
    if not seen then seen = see(i, j, member, amount, t, s, sl) end
    e.had, e.old, e.new, e.olds, e.oldz, e.prev = had, old, new, olds, oldz, prev
    for k = 1, nScore do
      local code = onScore[k](e)
      if code then return '!' .. code end
    end
  end

  local seq = nextSeq()
  local rank, newz = ranked and prev or 0, oldz
  local ns = fmt('%d', new)
  local changed = not (had and new == old)
  if changed then
    -- The score changed (or the member is new): it reaches the score now.
    local z = member
    if tie == 'first' then
      -- Each digit's 9-complement, by halves: 9999999999999999 itself is
      -- not exact in a double, 99999999 is. The first half changes every
      -- 1e8 seqs, so it is formatted once per call.
      local hi = (seq - seq % 1e8) / 1e8
      if hi ~= padHiOf then padHi, padHiOf = fmt('%08d', 99999999 - hi), hi end
      z = padHi .. fmt('%08d', 99999999 - seq % 1e8) .. '|' .. member
    elseif tie == 'last' then
      z = fmt('%016d', seq) .. '|' .. member
    end
    if had and z ~= oldz then call('ZREM', zkey, oldz) end
    local sc = ns -- the stored score (see the header: negated on asc boards)
    if not desc then sc = fmt('%d', -new) end
    call('ZADD', zkey, sc, z)
    if z ~= member then
      if mkey == pm then pmw[member] = z else call('HSET', mkey, member, z) end
    elseif had and oldz ~= member then
      call('HDEL', mkey, member)
      if mkey == pm then pmw[member] = false end
    end
    if ranked then
      if tie == 'shared' then
        rank = call('ZCOUNT', zkey, '(' .. sc, '+inf') + 1
      else
        rank = call('ZREVRANK', zkey, z) + 1
      end
    end
    newz = z
    if not had and sl.exp > now and not expired[s] then
      -- Relative to the script's clock, so an injected (test) clock that is
      -- far from the server's still yields the intended lifetime; once per
      -- call and slot (every later event's would set the same).
      expired[s] = true
      call('PEXPIRE', zkey, sl.exp - now)
      if mkey == pm then
        batchExpire(B, pm, sl.exp - now) -- after the batch's HSET made it
      else
        call('PEXPIRE', mkey, sl.exp - now)
      end
    end
  end

  if nWrite > 0 then
    if not seen then seen = see(i, j, member, amount, t, s, sl) end
    e.had, e.old, e.new, e.ns, e.changed, e.oldz, e.olds, e.newz, e.rank, e.prev, e.seq =
      had, old, new, ns, changed, oldz, olds, newz, rank, prev, seq
    for k = 1, nWrite do onWrite[k](e) end
    rank, prev = e.rank, e.prev
  end
  local name = ARGV[j + 2]
  if name ~= '' then batchSet(B, KEYS[3], member, name) end

  -- Noted last, written after every other write of the call (runEvents):
  -- Redis does not roll a script back, and a record written before a
  -- failing write would turn every retry into a false duplicate.
  rec = ARGV[j + 5] .. ',' .. ns .. ',' .. fmt('%d,%d,%d,%d', rank, prev, had and old or 0, seq) .. ',' .. sl.idx
  if seen then
    if e.extra then rec = rec .. e.extra end
    Rw[Rf[i]] = rec
    if e.tail then return '0' .. rec .. e.tail end
    return '0' .. rec
  end
  Rw[Rf[i]] = rec
  return '0' .. rec
end

-- What the events deferred, each written even when another could not be,
-- and before their records.
local finish = {
  function()
    if seqDirty then call('SET', KEYS[2], fmt('%d', seqLast)) end
  end,
}
for _, f in ipairs(on.finish) do finish[#finish + 1] = f end
finish[#finish + 1] = function() batchFlush(B) end
return runEvents(n, one, finish, R)
