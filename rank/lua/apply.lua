-- apply.lua: apply N score events to one board, in order, each atomically
-- and idempotently as if it were alone: one script call per board per
-- pipeline instead of one per event (N >= 1).
--
-- KEYS[1]    <p>:{b}:cfg     hash: v = config version, j = config JSON
-- KEYS[2]    <p>:{b}:seq     string: the board's change sequence
-- KEYS[3]    <p>:{b}:n       hash: member id -> display name
-- KEYS[4]    <p>:{b}:z:<A>   sorted set of period slot A
-- KEYS[5]    <p>:{b}:m:<A>   hash: member id -> sorted-set member (first/last), slot A
-- KEYS[6]    <p>:{b}:z:<B>   sorted set of period slot B (the period after A)
-- KEYS[7]    <p>:{b}:m:<B>   hash of slot B
-- KEYS[8]    <p>:{b}:z:<P>   sorted set of period slot P (the period before A:
--            late events within grace, R17)
-- KEYS[9]    <p>:{b}:m:<P>   hash of slot P
-- KEYS[10]   <p>:{b}:c:<P>   hash: member id -> events applied in P (R18)
-- KEYS[11]   <p>:{b}:c:<A>   the same for A
-- KEYS[12]   <p>:{b}:c:<B>   the same for B
--            (a board without periods passes its one period's keys as A, B and P)
-- KEYS[13]   <p>:{b}:ban     hash: the board's bans (see ban.lua; R21)
-- KEYS[14]   <p>:{b}:guard   a key never written: on Redis Cluster a call
--            that names a missing key never runs while its slot migrates
--            (rank/redisstore/cluster.go)
-- KEYS[15]   <p>:{b}:meta:<P>  hash: member id -> meta (§11), slot P
-- KEYS[16]   <p>:{b}:meta:<A>  the same for A
-- KEYS[17]   <p>:{b}:meta:<B>  the same for B
-- then, on a board with history (ARGV[21] > 0), three per event i at
-- k = 17 + 3*(i-1): KEYS[k+1..k+3] <p>:{b}:h:<P|A|B>:<member>, lists of
-- the member's last applied events in P, A and B (§11), newest first
--            The idempotency records are fields "<m>|<id>" (member m's
--            request id; R4 v1.1) of the bucket hashes <p>:{b}:r:<W>.<k>
--            (prelude's records, which also use the cfg hash's fields rw,
--            rs, ro, rb).
--            A cohort board's keys are built here too (see "cohorts" below;
--            the cfg hash's field co is its cohort config), and a region
--            board's (see "regions").
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
-- ARGV[10] mode: incr | best | set
-- ARGV[11] order: desc | asc
-- ARGV[12] tiebreak: first | last | shared
-- ARGV[13] idempotency window in ms
-- ARGV[14] start of slot P (unix ms)
-- ARGV[15] period index of P
-- ARGV[16] expiry time of P's keys
-- ARGV[17] starts_at in unix ms, "" = none
-- ARGV[18] ends_at in unix ms, "" = none
-- ARGV[19] grace in ms
-- ARGV[20] max_submissions, 0 = unlimited
-- ARGV[21] history: events kept per member and period, 0 = none
-- then eight per event i, at j = 21 + 8*(i-1):
-- ARGV[j+1] member id
-- ARGV[j+2] display name ("" keeps the stored one)
-- ARGV[j+3] op: 1 = delta, 2 = value
-- ARGV[j+4] amount, a decimal integer within +-(2^53-1)
-- ARGV[j+5] "<payload hash>.<attempt token>" (opaque here; the caller compares the
--           hash for conflicts and the token to tell its own write from a duplicate)
-- ARGV[j+6] the event's time `at` in unix ms, "" = the clock
-- ARGV[j+7] the event's request id
-- ARGV[j+8] the event's meta, a JSON object, "" = none
-- then RG, the events' regions on a region board (§17), two letters per
-- event in event order ("" on other boards; see "regions" below)
--
-- Derived boards (docs/protocol.md §8; the block "derived boards" below): the
-- board's dependants follow the idempotency keys, the events' arguments
-- and RG.
-- ARGV[#ARGV] is DK, the number of their keys at the end of KEYS, and
-- ARGV[#ARGV-1] DA, the number of their arguments just before those two
-- (both "0" for a board without dependants). Per dependant, with span S (1
-- for a union, the window's periods) and V = S + 2 views (the periods from
-- P on; a board without periods passes its one view V times):
--   KEYS: its seq, its names hash, its ban hash, then V view sorted sets
--   and V hidden-entry sets (<p>:{g}/<d>:z:<i> and :x:<i>);
--   ARGV: its weight, S, then V expiry times in unix ms (0 = never).
-- The dependants are those of the config version of ARGV[1]: deps.lua
-- gives the source a new version whenever its list changes.
--
-- Returns one string: the events' replies in order, joined by "\n" (one
-- bulk reply rather than an array of N, cheaper to build and to read; no
-- reply contains "\n"). Each is "0" .. record when it was applied,
-- "1" .. record when its id was already applied (nothing changed), or
-- "!" .. code when it failed, where record is
-- "hash.token,score,rank,prev_rank,prev_score,seq,period" (and ",<cohort>"
-- on a cohort board, whose ranks are then within it; see "cohorts"; on a
-- region board ",<region>.<region rank>" and, in the reply only, after the
-- record ";<region left>" when the member moved; see "regions"). Codes:
-- invalid_score, bad_request, out_of_range, board_closed:<reason> (R30:
-- not_started, ended or period_over), limit_reached,
-- at_ahead, banned (that event changed nothing; the next ones still run). A
-- refusal of the whole call is an error reply "LB <code>": unknown_board,
-- stale (the config version changed), clock (now is outside slots A and B),
-- expired (a ban's until has passed: ban.lua must lift it first),
-- bad_request (the board arguments); it writes nothing. The clock is read
-- once per call. A redis.call that fails part way (only a key of the
-- wrong type can) makes the call answer its error after the events before
-- it were written with their records (prelude's runEvents).
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
-- that contains t. R18: with max_submissions > 0, a member's applied events
-- per period are counted in that period's c hash; a duplicate is answered
-- before the count is read and never counts.
--
-- Each event's rank and score are read right after its own step (R3): the
-- events of a call run one after the other, exactly as N calls in a row.
--
-- Sorted-set scores are the plain integer score, negated on asc boards so
-- every read uses the REV commands. Ties: first -> "<16 digits of inverted
-- seq>|<member>", last -> "<16 digits of seq>|<member>", shared -> "<member>"
-- ('|' never occurs in a member id, so the form is unambiguous).

local MAX = 9007199254740991
-- The per-event path below runs tens of thousands of times a second on
-- Redis's one core, where the script's own Lua work (string.format above
-- all) costs about as much as its commands (docs/performance.md, "Redis
-- instructions per event"): it keeps what it calls in locals, formats
-- numbers with few string.format calls, and makes few strings.
local call, fmt, sfind, ssub = redis.call, string.format, string.find, string.sub

-- The config version check (prelude's refused) with the fields the
-- records (prelude's recordsOpen) and the raw-entry lookup read, in one call.
local meta = call('HMGET', KEYS[1], 'v', 'rw', 'rs', 'ro', 'rb', 'co')
if not meta[1] then return redis.error_reply('LB unknown_board') end
if meta[1] ~= ARGV[1] then return redis.error_reply('LB stale') end
if meta[6] and not string.match(meta[6], '^%d+%.%d+%.%d+%.%d+$') then return redis.error_reply('LB bad_request') end

local mode, order, tie = ARGV[10], ARGV[11], ARGV[12]
-- A shard of a sharded board (R24) passes its tiebreak with the suffix
-- "@t": the tie key is then the store's time in µs, strictly increasing
-- within the shard (its seq key holds the last one), so ties across
-- shards order by the time of reaching the score, and each reply also
-- carries ";<new sorted-set member>;<old one>;<record hash>" for the rank
-- across shards and the record's rewrite (rerecord.lua).
local sharded = false
if ssub(tie, -2) == '@t' then tie, sharded = ssub(tie, 1, -3), true end
local window = tonumber(ARGV[13])
local dk, da = tonumber(ARGV[#ARGV]), tonumber(ARGV[#ARGV - 1]) -- derived boards
if not dk or not da then return redis.error_reply('LB bad_request') end
local n = (#ARGV - 24 - da) / 8
local rgs = ARGV[#ARGV - 2 - da] -- the events' regions (see "regions")
local hist = tonumber(ARGV[21])
local hk = 0 -- history keys
if hist and hist > 0 then hk = 3 * n end
local startsAt, endsAt = tonumber(ARGV[17]), tonumber(ARGV[18])
local grace, maxSubs = tonumber(ARGV[19]), tonumber(ARGV[20])
if (mode ~= 'incr' and mode ~= 'best' and mode ~= 'set')
  or (order ~= 'desc' and order ~= 'asc')
  or (tie ~= 'first' and tie ~= 'last' and tie ~= 'shared')
  or not window or window < 1 or not grace or grace < 0 or not maxSubs
  or (ARGV[17] ~= '' and not startsAt) or (ARGV[18] ~= '' and not endsAt)
  or not hist or n < 1 or n % 1 ~= 0 or #KEYS ~= 17 + hk + dk
  or (rgs ~= '' and (#rgs ~= 2 * n or sfind(rgs, '[^A-Z]'))) then
  return redis.error_reply('LB bad_request')
end

-- The period slots: 0 = P, 1 = A, 2 = B (see the header).
local boundary = tonumber(ARGV[4])
local slots = {
  [0] = {z = KEYS[8], m = KEYS[9], c = KEYS[10], e = KEYS[15], from = tonumber(ARGV[14]), to = tonumber(ARGV[3]), idx = ARGV[15], exp = tonumber(ARGV[16])},
  [1] = {z = KEYS[4], m = KEYS[5], c = KEYS[11], e = KEYS[16], from = tonumber(ARGV[3]), to = boundary, idx = ARGV[6], exp = tonumber(ARGV[8])},
  [2] = {z = KEYS[6], m = KEYS[7], c = KEYS[12], e = KEYS[17], from = boundary, to = tonumber(ARGV[5]), idx = ARGV[7], exp = tonumber(ARGV[9])},
}

-- The clock is read once per call (the records' bucket depends on it).
local bkey = KEYS[13]
local bans = call('EXISTS', bkey) == 1
local now, cur = clockMs(), 1
if boundary > 0 then
  if now < slots[1].from or now >= slots[2].to then return redis.error_reply('LB clock') end
  if now >= boundary then cur = 2 end
end
if bans and banDue(bkey, now) then return redis.error_reply('LB expired') end

local R = recordsOpen(meta, window, now, 21, 8, n)

-- The call's writes of hash fields (prelude's batch B): the names, and
-- the member hash of the clock's slot (where nearly every event lands).
-- That member hash is read for every event of the call with one HMGET;
-- what this call sets in it after is in B (false: deleted), so each event
-- still reads it as it is after the events before it. Another slot's
-- member hash is read and written per event.
local B = batchNew()
local pm = slots[cur].m
local pmv
do
  local ms = {}
  for i = 1, n do ms[i] = ARGV[21 + 8 * (i - 1) + 1] end
  pmv = call('HMGET', pm, unpack(ms))
end
local function memberZ(mkey, member, i)
  if mkey ~= pm then return call('HGET', mkey, member) end
  local v = batchGet(B, pm, member)
  if v ~= nil then return v end
  return pmv[i]
end

-- ---- derived boards (docs/protocol.md §8, R22): the dependants' views ----
-- maintain adds weight × d to member's entry in each view the event's slot
-- s (0 = P, 1 = A, 2 = B) lands in: slot s's views are s+1 .. s+S. An
-- absent entry is created (at weight × d, 0 included: an entry of 0 is an
-- entry); it goes to the hidden set when the member is banned from the
-- derived board (its own bans) or already hidden there.
local deps = {}
do
  local k, a = #KEYS - dk + 1, #ARGV - 1 - da
  while k <= #KEYS do
    local S = tonumber(ARGV[a + 1])
    local V = S + 2
    local d = {seq = KEYS[k], n = KEYS[k + 1], ban = KEYS[k + 2], w = tonumber(ARGV[a]), S = S, z = {}, x = {}, exp = {}}
    for v = 1, V do
      d.z[v], d.x[v], d.exp[v] = KEYS[k + 2 + v], KEYS[k + 2 + V + v], tonumber(ARGV[a + 1 + v])
    end
    deps[#deps + 1] = d
    k, a = k + 3 + 2 * V, a + 2 + V
  end
end
-- depMoved counts the events maintain ran for: each dependant's seq moves
-- once per event, written at the end with one INCRBY.
local depMoved = 0
local function maintain(s, member, name, d, had)
  depMoved = depMoved + 1
  for _, dp in ipairs(deps) do
    local amt = dp.w * d
    if order == 'asc' then amt = -amt end
    local banned = false
    if call('EXISTS', dp.ban) == 1 then
      local r = call('HMGET', dp.ban, member, 'g|' .. member)
      banned = (r[1] or r[2]) and true or false
    end
    for v = s + 1, s + dp.S do
      local exp = dp.exp[v]
      if exp == 0 or exp > now then
        local z, x = dp.z[v], dp.x[v]
        local to = z
        if not call('ZSCORE', z, member) and (banned or call('ZSCORE', x, member)) then to = x end
        if amt ~= 0 or not had or not call('ZSCORE', to, member) then
          local fresh = exp > 0 and call('EXISTS', to) == 0
          call('ZINCRBY', to, fmt('%d', amt), member)
          if fresh then call('PEXPIRE', to, exp - now) end
        end
      end
    end
    if name ~= '' then batchSet(B, dp.n, member, name) end
  end
end
-- ---- end of derived boards ----

-- admit is R17 for an event of time t: the slot it is applied to, or nil
-- and the refusal's code; board_closed carries its reason (R30), whose
-- times the caller reads from the config (rank.Board.Closed).
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

-- rank of sorted-set member z of zkey whose stored score is s (a string)
local function rankOf(zkey, z, s)
  if tie == 'shared' then
    return call('ZCOUNT', zkey, '(' .. s, '+inf') + 1
  end
  return call('ZREVRANK', zkey, z) + 1
end

-- The board's seq (KEYS[2]) is read once per call, counted here, and
-- written once at the end when more than one event took a value (an INCR
-- for the first event, a SET at the end for the others, instead of an INCR
-- per event). Nothing else runs between the events of a call, and the
-- SET runs (finish, below) even when an event failed part way.
local seqLast, seqDirty = nil, false

-- nextSeq is the next change sequence of an unsharded board.
local function nextSeq()
  if not seqLast then
    seqLast = call('INCR', KEYS[2])
  else
    seqLast, seqDirty = seqLast + 1, true
  end
  return seqLast
end

-- tieTime is a shard's tie key (see sharded above): the clock in µs (the
-- injected clock's ms × 1000), above the shard's last one.
local clockUs -- read once per call: later events of the call go above it
local function tieTime()
  if not seqLast then seqLast = tonumber(call('GET', KEYS[2]) or '0') end
  if not clockUs then
    if ARGV[2] ~= '' then
      clockUs = tonumber(ARGV[2]) * 1000
    else
      local t = call('TIME')
      clockUs = tonumber(t[1]) * 1000000 + tonumber(t[2])
    end
  end
  local us = clockUs
  if us <= seqLast then us = seqLast + 1 end
  seqLast, seqDirty = us, true
  return us
end

-- keepMeta writes event meta mt as member's meta in slot sl ("" drops
-- it), in the event's own step (R26). Whether a slot's meta hash exists is
-- asked once per call, so a board whose events carry no meta pays one
-- EXISTS per call for it, not a write per event.
local function keepMeta(sl, member, mt)
  if sl.hasE == nil then sl.hasE = call('EXISTS', sl.e) == 1 end
  if mt ~= '' then
    call('HSET', sl.e, member, mt)
    if not sl.hasE then
      sl.hasE = true
      if sl.exp > now then call('PEXPIRE', sl.e, sl.exp - now) end
    end
  elseif sl.hasE then
    call('HDEL', sl.e, member)
  end
end

-- ---- cohorts (docs/protocol.md §12, R27) ----
-- A cohort board's cfg hash holds co = "<size>.<tiers>.<promote>.<demote>"
-- (tiers 0 without a league), written with the config at its creation
-- (putboard.lua) and never changed after. Which cohort a member joins is
-- decided here, so its keys are built from KEYS[1]'s prefix, as the
-- records' are (same hash tag): per period <i>, the hash k:<i> (member ->
-- "<tier>.<n>", tier an index from 0 and n the cohort from 1), the hash
-- k:<i>/n (tier -> members placed) and each cohort's sorted set
-- k:<i>/<tier>.<n>, whose members are the board's own (so ties order as on
-- the board); per league board the hash lg: member -> the tier of its next
-- placement (absent: the lowest), '#open' = the last period placed in and
-- '#exp' = when that period's keys expire. A league's period keys get no
-- expiry until its moves are made (leagueOpen), however late that is.
local co
if meta[6] then
  local sz, nt, pr, dm = string.match(meta[6], '^(%d+)%.(%d+)%.(%d+)%.(%d+)$')
  co = {size = tonumber(sz), tiers = tonumber(nt), promote = tonumber(pr), demote = tonumber(dm),
    base = ssub(KEYS[1], 1, -4)} -- KEYS[1] ends in "cfg"
end

-- expireIn gives key the ms left until exp, or drops it when none are.
local function expireIn(key, exp)
  if exp > now then call('PEXPIRE', key, exp - now) else call('UNLINK', key) end
end

-- leagueOpen makes the moves of the last period placed in when the first
-- member is placed in a later period idx (R27): in each of its cohorts,
-- by final order, the best promote move one tier up and the worst demote
-- one down (promotion first in a cohort too small for both), within the
-- tiers. The others keep their tier, as does a member with no entry in
-- that period: the tier it last had. The marker '#open' is written in
-- this same step, so the moves are made once, whichever node places
-- first; periods nobody played have no moves, so one fold covers any gap.
local function leagueOpen(idx, exp)
  local lg = co.base .. 'lg'
  local o = call('HMGET', lg, '#open', '#exp')
  if o[1] and tonumber(o[1]) >= tonumber(idx) then return end
  if o[1] then
    local pk, oexp = co.base .. 'k:' .. o[1], tonumber(o[2])
    local cnt = call('HGETALL', pk .. '/n')
    for c = 1, #cnt, 2 do
      local t = tonumber(cnt[c])
      for n = 1, math.ceil(tonumber(cnt[c + 1]) / co.size) do
        local ck = pk .. '/' .. cnt[c] .. '.' .. fmt('%d', n)
        local ms = call('ZREVRANGE', ck, 0, -1)
        for i = 1, #ms do
          local step = 0
          if i <= co.promote then step = 1 elseif i > #ms - co.demote then step = -1 end
          local nt = math.min(math.max(t + step, 0), co.tiers - 1)
          if nt ~= t then
            local id = ms[i]
            if ssub(id, 17, 17) == '|' then id = ssub(id, 18) end
            call('HSET', lg, id, fmt('%d', nt))
          end
        end
        expireIn(ck, oexp)
      end
    end
    expireIn(pk .. '/n', oexp)
    expireIn(pk, oexp)
  end
  call('HSET', lg, '#open', idx, '#exp', fmt('%d', exp))
end

-- cohortJoin is member's cohort in slot sl, placing it when it has none:
-- the next place of its tier, one HINCRBY in this atomic step (R27: two
-- nodes placing at once never overfill a cohort). It returns the cohort,
-- the period's k key, and whether the cohort is new (its set still to be
-- made).
local function cohortJoin(sl, member)
  local pk = co.base .. 'k:' .. sl.idx
  local c = call('HGET', pk, member)
  if c then return c, pk, false end
  local t = '0'
  if co.tiers > 0 then
    leagueOpen(sl.idx, sl.exp)
    t = call('HGET', co.base .. 'lg', member) or '0'
  end
  local k = call('HINCRBY', pk .. '/n', t, 1) - 1
  c = t .. '.' .. fmt('%d', (k - k % co.size) / co.size + 1)
  call('HSET', pk, member, c)
  if co.tiers == 0 and k == 0 and sl.exp > now then
    call('PEXPIRE', pk .. '/n', sl.exp - now)
    call('PEXPIRE', pk, sl.exp - now)
  end
  return c, pk, k % co.size == 0
end
-- ---- end of cohorts ----

-- ---- regions (docs/protocol.md §17, R37) ----
-- On a region board RG names each event's region: its member's profile
-- country as the gateway knows it (ZZ for none); the profile lives in
-- another slot, so the script cannot read it. The event places the
-- member's entry in that region, moving it there from the one it was in.
-- The keys are built from KEYS[1]'s prefix, as the cohorts' are (same hash
-- tag): per period <i>, the hash g:<i> (member -> region), each region's
-- sorted set g:<i>/<region> holding the board's own entries (the same
-- sorted-set members and scores, so ties order as on the board), and the
-- set g:<i>/r of the regions placed in (regions.lua's list). A region's set
-- is written only when its member's entry is: a placement (a new member, a
-- move) costs the hash field, the set's SADD and their expiries; an event
-- that keeps its region costs its region set's ZREM (when the tie key
-- changes), ZADD and rank, and reads no hash.
local rg
if rgs ~= '' then rg = ssub(KEYS[1], 1, -4) .. 'g:' end -- KEYS[1] ends in "cfg"

-- regionPlace writes event i's entry (sorted-set member newz, stored
-- score sc; oldz and changed: the member had an entry, under oldz, and
-- its score changed) to its region's standings in slot s and returns the
-- region, the rank there and the region left ("" if none). An entry
-- already in the event's region (nearly every event) is found by the
-- write of that region's set itself: the ZREM of its old sorted-set
-- member, a ZADD XX CH of its new score, or a ZSCORE when the score did
-- not change. Only a placement reads the member's hash field.
local function regionPlace(i, s, member, had, changed, oldz, newz, sc)
  local sl = slots[s]
  local gk = rg .. sl.idx
  local region = ssub(rgs, 2 * i - 1, 2 * i)
  local rk = gk .. '/' .. region
  if had then
    local here
    if not changed then
      here = call('ZSCORE', rk, oldz)
    elseif newz ~= oldz then
      here = call('ZREM', rk, oldz) == 1
      if here then call('ZADD', rk, sc, newz) end
    else
      here = call('ZADD', rk, 'XX', 'CH', sc, newz) == 1
    end
    if here then return region, rankOf(rk, newz, sc), '' end
  end
  -- The field as this call left it (B), else as stored.
  local from = had and batchGet(B, gk, member)
  if had and from == nil then from = call('HGET', gk, member) end
  if from then call('ZREM', gk .. '/' .. from, oldz) end
  call('ZADD', rk, sc, newz)
  if s == cur then batchSet(B, gk, member, region) else call('HSET', gk, member, region) end
  local added = call('SADD', gk .. '/r', region)
  if sl.exp > now then
    local ttl = sl.exp - now
    call('PEXPIRE', rk, ttl)
    if added == 1 then call('PEXPIRE', gk .. '/r', ttl) end
    if s == cur then batchExpire(B, gk, ttl) else call('PEXPIRE', gk, ttl) end
  end
  return region, rankOf(rk, newz, sc), from or ''
end
-- ---- end of regions ----

-- The first 8 digits of tiebreak first's pad, and the seq / 1e8 they are of.
local padHi, padHiOf

-- one applies event i and returns its reply string.
local function one(i)
  local j = 21 + 8 * (i - 1)
  local member, name, op = ARGV[j + 1], ARGV[j + 2], ARGV[j + 3]
  local rec = recordGet(R, i)
  if rec then return '1' .. rec end
  if bans then
    local r = call('HMGET', bkey, member, 'g|' .. member)
    if r[1] or r[2] then return '!banned' end
  end

  local amount = tonumber(ARGV[j + 4])
  if not amount or amount % 1 ~= 0 or amount > MAX or amount < -MAX then
    return '!invalid_score'
  end
  if (op ~= '1' and op ~= '2') or ((mode == 'incr') ~= (op == '1'))
    or member == '' or sfind(member, '|', 1, true) then
    return '!bad_request'
  end

  local t = now
  if ARGV[j + 6] ~= '' then
    t = tonumber(ARGV[j + 6])
    if not t then return '!bad_request' end
  end
  local s, code = admit(t)
  if not s then return '!' .. code end
  local sl = slots[s]
  local zkey, mkey, period, expat = sl.z, sl.m, sl.idx, sl.exp

  if maxSubs > 0 and tonumber(call('HGET', sl.c, member) or '0') >= maxSubs then
    return '!limit_reached'
  end

  local oldz = memberZ(mkey, member, i)
  local olds = false
  if oldz then
    olds = call('ZSCORE', zkey, oldz)
  else
    -- A raw "<member>" entry: tiebreak shared writes one, and the board's
    -- tiebreak may have been shared when this period was written.
    oldz = member
    olds = call('ZSCORE', zkey, member)
  end
  local had = olds ~= false
  local old = 0
  if had then
    old = tonumber(olds)
    if order == 'asc' then old = -old end
  end

  local new = amount
  if mode == 'incr' then
    if had then new = old + amount end
  elseif mode == 'best' then
    if had then
      if (order == 'asc' and amount >= old) or (order == 'desc' and amount <= old) then
        new = old
      end
    end
  end
  -- Exact: |old|, |amount| <= 2^53-1, so a true sum beyond the range rounds
  -- to a double that is still beyond it.
  if new > MAX or new < -MAX then return '!out_of_range' end

  local prev, prevscore = 0, 0
  if had then
    prev = rankOf(zkey, oldz, olds)
    prevscore = old
  end

  local seq
  if sharded then seq = tieTime() else seq = nextSeq() end
  local rank, newz = prev, oldz
  local ns = fmt('%d', new)
  if not (had and new == old) then
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
    if order == 'asc' then sc = fmt('%d', -new) end
    call('ZADD', zkey, sc, z)
    if z ~= member then
      if mkey == pm then batchSet(B, pm, member, z) else call('HSET', mkey, member, z) end
    elseif had and oldz ~= member then
      call('HDEL', mkey, member)
      if mkey == pm then batchSet(B, pm, member, false) end
    end
    rank, newz = rankOf(zkey, z, sc), z
    if not had and expat > now then
      -- Relative to the script's clock, so an injected (test) clock that is
      -- far from the server's still yields the intended lifetime.
      call('PEXPIRE', zkey, expat - now)
      if mkey == pm then
        batchExpire(B, pm, expat - now) -- after the batch's HSET made it
      else
        call('PEXPIRE', mkey, expat - now)
      end
    end
  end
  -- A cohort board's acks rank within the member's cohort, whose set
  -- follows the board's (its prev_rank read before its own write).
  local cid
  if co then
    local pk, fresh
    cid, pk, fresh = cohortJoin(sl, member)
    local ck = pk .. '/' .. cid
    if had then prev = rankOf(ck, oldz, olds) end
    rank = prev
    if not (had and new == old) then
      if had and newz ~= oldz then call('ZREM', ck, oldz) end
      local sc = ns
      if order == 'asc' then sc = fmt('%d', -new) end
      call('ZADD', ck, sc, newz)
      if fresh and co.tiers == 0 and expat > now then call('PEXPIRE', ck, expat - now) end
      rank = rankOf(ck, newz, sc)
    end
  end
  local region, rrank, rfrom
  if rg then
    local sc = ns
    if order == 'asc' then sc = fmt('%d', -new) end
    region, rrank, rfrom = regionPlace(i, s, member, had, not (had and new == old), oldz, newz, sc)
  end
  if maxSubs > 0 and call('HINCRBY', sl.c, member, 1) == 1 and expat > now then
    call('PEXPIRE', sl.c, expat - now)
  end

  -- The meta of the event that set the score: a best board's event that
  -- did not improve it leaves the one that did.
  if mode ~= 'best' or not had or new ~= old then keepMeta(sl, member, ARGV[j + 8]) end
  if hk > 0 then
    -- {"id","delta"|"value","score","at","meta"} (§11); request ids need
    -- no escaping ([A-Za-z0-9_.:-]) and meta is a JSON object.
    local h = KEYS[17 + 3 * (i - 1) + s + 1]
    local ev = '{"id":"' .. ARGV[j + 7] .. (op == '1' and '","delta":' or '","value":') .. fmt('%d', amount)
      .. ',"score":' .. ns .. ',"at":' .. fmt('%d', t)
    if ARGV[j + 8] ~= '' then ev = ev .. ',"meta":' .. ARGV[j + 8] end
    local len = call('LPUSH', h, ev .. '}')
    if len > hist then call('LTRIM', h, 0, hist - 1) end
    if len == 1 and expat > now then call('PEXPIRE', h, expat - now) end
  end
  if name ~= '' then batchSet(B, KEYS[3], member, name) end
  if #deps > 0 then maintain(s, member, name, new - old, had) end -- derived boards

  -- Noted last, written after every other write of the call (runEvents):
  -- Redis does not roll a script back, and a record written before a
  -- failing write would turn every retry into a false duplicate.
  rec = ARGV[j + 5] .. ',' .. ns .. ',' .. fmt('%d,%d,%d,%d', rank, prev, prevscore, seq) .. ',' .. period
  if cid then rec = rec .. ',' .. cid end -- a cohort board's: "<tier>.<n>"
  if region then rec = rec .. ',' .. region .. '.' .. fmt('%d', rrank) end
  recordPut(R, i, rec)
  if sharded then
    return '0' .. rec .. ';' .. newz .. ';' .. oldz .. ';' .. R.cur
  end
  if rfrom and rfrom ~= '' then return '0' .. rec .. ';' .. rfrom end
  return '0' .. rec
end

-- What the events deferred, each written even when another could not be,
-- and before their records.
return runEvents(n, one, {
  function()
    if seqDirty then call('SET', KEYS[2], fmt('%d', seqLast)) end
  end,
  function()
    if depMoved > 0 then
      for _, dp in ipairs(deps) do call('INCRBY', dp.seq, depMoved) end
    end
  end,
  function() batchFlush(B) end,
}, R)
