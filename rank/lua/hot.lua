-- hot.lua: a hot board's events and its bucket boundaries (docs/protocol.md §8,
-- R22). A hot board keeps each member's sums per bucket and two views: the
-- current one (z:0, what top.lua and ranks.lua read, scores of the current
-- bucket) and the next one (h:nx, the scores the members will have in the
-- bucket named by the state's nxt), built in small steps during the bucket.
-- Every score written to either view is computed from scratch from the
-- member's sums with rank.Decay.DecayedScore's formula (same operations in
-- the same order, so Go and Lua agree to the bit), never by scaling a view:
-- a step that overwrites a member's next score with one computed from its
-- sums at that moment is exact whatever events came before or after it.
--
-- KEYS[1]    <p>:{b}:cfg     hash: v = config version
-- KEYS[2]    <p>:{b}:seq     string: the board's change sequence
-- KEYS[3]    <p>:{b}:n       hash: member id -> display name
-- KEYS[4]    <p>:{b}:z:0     sorted set: the current view (scores in thousandths)
-- KEYS[5]    <p>:{b}:h:nx    sorted set: the next view, being built
-- KEYS[6]    <p>:{b}:h:s     hash: member id -> its sums "<bucket>:<sum>,..."
-- KEYS[7]    <p>:{b}:h:st    hash: cur = bucket of z:0; nxt = bucket h:nx is built
--            for; cursor = HSCAN cursor of that build; done = 1 when built;
--            run = run_id of the server process the cursor belongs to
-- KEYS[8]    <p>:{b}:c:0     hash: member id -> events applied (R18)
-- KEYS[9]    <p>:{b}:ban     hash: the board's bans (see ban.lua)
-- KEYS[10]   <p>:{b}:x:0     sorted set: banned members' hidden entries, current
-- KEYS[11]   <p>:{b}:h:xn    sorted set: banned members' entries, next
-- KEYS[12]   <p>:{b}:h:lease string: the token of the node doing the build
-- KEYS[13]   <p>:{b}:guard   op apply: a key never written (apply.lua's KEYS[14])
--
-- ARGV[1]  config version the caller resolved the keys with
-- ARGV[2]  now in unix ms, or "" to read the server's TIME (the one clock)
-- ARGV[3]  bucket length in ms
-- ARGV[4]  buckets
-- ARGV[5]  factor (a decimal that parses to the config's float64)
-- ARGV[6]  order: desc | asc
-- ARGV[7]  op: apply | step | remove
-- op apply (as apply.lua; ARGV[8..13] then seven per event at j = 13 + 7*(i-1)):
-- ARGV[8]  idempotency window in ms
-- ARGV[9]  starts_at in unix ms, "" = none
-- ARGV[10] ends_at in unix ms, "" = none
-- ARGV[11] grace in ms
-- ARGV[12] max_submissions, 0 = unlimited
-- ARGV[13] cap (§18): "<points>.<per>" (per: period or day), "" = none, as
--          apply_cap.lua counts it (the board has one period: its counts
--          are P .. 'cap:0'; per day P .. 'cap:d<day>', built from KEYS[1]'s
--          prefix P); a capped event's record ends in ",a<applied>"
-- ARGV[j+1] member id, ARGV[j+2] name, ARGV[j+3] op (1 = delta),
-- ARGV[j+4] amount, ARGV[j+5] "<payload hash>.<attempt token>",
-- ARGV[j+6] `at` in unix ms, "" = the clock, ARGV[j+7] request id
-- op step:
-- ARGV[8]  members per step (HSCAN COUNT)
-- ARGV[9]  lease token; "" = do the step whoever holds the lease (a reader or
--          writer that found the board behind its clock)
-- ARGV[10] lease length in ms
-- op remove:
-- ARGV[8]  member id: its sums and next entries go (after ban.lua removed
--          its current entry)
--
-- apply returns its events' replies joined with "\n", as apply.lua does
-- (each "0"/"1" .. record or "!" .. code; out_of_range when a bucket's sum would leave
-- ±MaxHotBucketSum, board_closed:outside_window when the event's bucket has
-- left the window, board_closed:not_started or :ended by the schedule), or
-- the error "LB hot" when z:0 is not the view of the clock's
-- bucket: nothing was written; the caller runs steps, then again.
-- step returns {cur, clock bucket, status}: status "idle" (nothing to do),
-- "busy" (another node holds the lease), "step" (did a part of the build),
-- "swap" (made the next view current). remove returns 1.
-- Errors "LB <code>": unknown_board, stale, expired, bad_request.

-- The config version check (prelude's refused) with the fields the
-- records read (prelude's recordsOpen), in one call.
local meta = redis.call('HMGET', KEYS[1], 'v', 'rw', 'rs', 'ro', 'rb')
if not meta[1] then return redis.error_reply('LB unknown_board') end
if meta[1] ~= ARGV[1] then return redis.error_reply('LB stale') end

local span, nb, factor, order, op = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6], ARGV[7]
if not span or span < 1 or not nb or nb < 1 or not factor then
  return redis.error_reply('LB bad_request')
end
local MAX = 9007199254740991
local MAXB = 22517998136 -- rank.MaxHotBucketSum
local zcur, znext, sums, st, counts, bkey, xcur, xnext, lease = KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[11], KEYS[12]

-- parse reads a sums record into a table bucket -> sum; it also returns
-- the oldest bucket in it (nil when none).
local function parse(rec)
  local t, low = {}, nil
  if rec then
    for b, s in string.gmatch(rec, '(-?%d+):(-?%d+)') do
      b = tonumber(b)
      t[b] = tonumber(s)
      if not low or b < low then low = b end
    end
  end
  return t, low
end

-- format writes the buckets of t newer than oldest back as a record ("" when none).
local function format(t, oldest)
  local parts = {}
  for b, s in pairs(t) do
    if b > oldest then parts[#parts + 1] = string.format('%d:%d', b, s) end
  end
  return table.concat(parts, ',')
end

-- inWindow reports whether t holds an event within the window at bucket c.
local function inWindow(t, c)
  for b in pairs(t) do
    if b <= c and c - b < nb then return true end
  end
  return false
end

-- round is math.Round: half away from zero.
local function round(v)
  if v < 0 then return -round(-v) end
  local f = math.floor(v)
  if v - f >= 0.5 then return f + 1 end
  return f
end

-- score is rank.Decay.DecayedScore at bucket c, in thousandths.
local function score(t, c)
  local acc, w = 0, 1
  for k = 0, nb - 1 do
    local s = t[c - k]
    if s and s ~= 0 then acc = acc + w * s end
    w = w * factor
  end
  return round(acc * 1000)
end

local function stored(s)
  if order == 'asc' then s = -s end
  return string.format('%d', s)
end

local function banned(member)
  local r = redis.call('HMGET', bkey, member, 'g|' .. member)
  return r[1] or r[2]
end

local now = clockMs()
local cb = math.floor(now / span)
local state = redis.call('HMGET', st, 'cur', 'nxt', 'cursor', 'done', 'run')
local cur, nxt = tonumber(state[1]), tonumber(state[2])
if not cur and redis.call('EXISTS', sums) == 0 then
  -- A new board: nothing to rebase.
  redis.call('HSET', st, 'cur', cb)
  cur = cb
end
local lost = not cur -- data without state (never written so): rebuild from the sums
if lost then cur = -1 end

if op == 'remove' then
  local member = ARGV[8]
  redis.call('HDEL', sums, member)
  redis.call('ZREM', znext, member)
  redis.call('ZREM', xnext, member)
  return 1
end

if op == 'step' then
  local token = ARGV[9]
  if token ~= '' then
    local holder = redis.call('GET', lease)
    if holder and holder ~= token then return {cur, cb, 'busy'} end
    redis.call('SET', lease, token, 'PX', tonumber(ARGV[10]))
  end
  local target = cb + 1 -- build the bucket after the clock's
  if cur < cb then target = cb end -- behind: build the clock's own
  if cur < cb and nxt == cb and state[4] == '1' then
    -- The next view is complete: make it current. Bans put or lifted
    -- during the build are applied to it first (a handful of members).
    local bans = redis.call('HKEYS', bkey)
    local hidden = {}
    for _, f in ipairs(bans) do
      if string.sub(f, 1, 1) ~= '|' then
        if string.sub(f, 1, 2) == 'g|' then f = string.sub(f, 3) end
        hidden[f] = true
      end
    end
    for m in pairs(hidden) do
      local s = redis.call('ZSCORE', znext, m)
      if s then
        redis.call('ZREM', znext, m)
        redis.call('ZADD', xnext, s, m)
      end
    end
    local xs = redis.call('ZRANGE', xnext, 0, -1, 'WITHSCORES')
    for i = 1, #xs, 2 do
      if not hidden[xs[i]] then
        redis.call('ZREM', xnext, xs[i])
        redis.call('ZADD', znext, xs[i + 1], xs[i])
      end
    end
    -- UNLINK frees a big set off the main thread; RENAME is O(1).
    redis.call('UNLINK', zcur, xcur)
    if redis.call('EXISTS', znext) == 1 then redis.call('RENAME', znext, zcur) end
    if redis.call('EXISTS', xnext) == 1 then redis.call('RENAME', xnext, xcur) end
    redis.call('HSET', st, 'cur', cb)
    redis.call('HDEL', st, 'nxt', 'cursor', 'done', 'run')
    redis.call('INCR', KEYS[2])
    return {cb, cb, 'swap'}
  end
  -- An HSCAN cursor means nothing to another server process (a restart,
  -- a failover: another hash seed), so the build notes whose it is.
  local run = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
  if nxt ~= target then
    -- Start (or restart, when the clock skipped past it) the build.
    redis.call('UNLINK', znext, xnext)
    redis.call('HSET', st, 'nxt', target, 'cursor', '0', 'done', '0', 'run', run)
    nxt, state[3], state[4] = target, '0', '0'
  elseif state[4] ~= '1' and state[5] ~= run then
    -- Redo the scan from the start: every member's next score is
    -- recomputed from its sums again, which is harmless.
    redis.call('HSET', st, 'cursor', '0', 'run', run)
    state[3] = '0'
  end
  if state[4] == '1' then return {cur, cb, 'idle'} end
  local anyBans = redis.call('EXISTS', bkey) == 1
  local r = redis.call('HSCAN', sums, state[3], 'COUNT', tonumber(ARGV[8]))
  local items = r[2]
  -- Buckets at or before oldest are outside every window still needed:
  -- the current one (cur, or the one before target when cur is unset).
  local oldest = cur - nb
  if lost then oldest = target - nb end
  for i = 1, #items, 2 do
    local m, rec = items[i], items[i + 1]
    local t, low = parse(rec)
    if not low or low <= oldest then
      -- Buckets outside every window still needed: write the rest back.
      local kept = format(t, oldest)
      if kept == '' then
        redis.call('HDEL', sums, m)
      else
        redis.call('HSET', sums, m, kept)
      end
    end
    if inWindow(t, target) then
      local s = stored(score(t, target))
      if anyBans and banned(m) then
        redis.call('ZADD', xnext, s, m)
        redis.call('ZREM', znext, m)
      else
        redis.call('ZADD', znext, s, m)
        redis.call('ZREM', xnext, m)
      end
    else
      redis.call('ZREM', znext, m)
      redis.call('ZREM', xnext, m)
    end
  end
  if r[1] == '0' then
    redis.call('HSET', st, 'cursor', '0', 'done', '1')
  else
    redis.call('HSET', st, 'cursor', r[1])
  end
  return {cur, cb, 'step'}
end

if op ~= 'apply' then return redis.error_reply('LB bad_request') end
if cur ~= cb then return redis.error_reply('LB hot') end

local window = tonumber(ARGV[8])
local startsAt, endsAt = tonumber(ARGV[9]), tonumber(ARGV[10])
local grace, maxSubs = tonumber(ARGV[11]), tonumber(ARGV[12])
local n = (#ARGV - 13) / 7
-- Caps (§18): the counter of this call's events, and its expiry.
local capPts, capKey, capExp
if ARGV[13] ~= '' then
  local pts, per = string.match(ARGV[13], '^(%d+)%.(%l+)$')
  capPts = tonumber(pts)
  if not capPts or (per ~= 'period' and per ~= 'day') then return redis.error_reply('LB bad_request') end
  capKey = string.sub(KEYS[1], 1, -4) .. 'cap:0'
  if per == 'day' then
    local day = math.floor(now / 86400000)
    capKey, capExp = string.sub(KEYS[1], 1, -4) .. 'cap:d' .. string.format('%d', day), (day + 2) * 86400000
  end
end
if (order ~= 'desc' and order ~= 'asc') or not window or window < 1 or not grace or not maxSubs
  or (ARGV[9] ~= '' and not startsAt) or (ARGV[10] ~= '' and not endsAt)
  or n < 1 or n % 1 ~= 0 or #KEYS ~= 13 then
  return redis.error_reply('LB bad_request')
end
local bans = redis.call('EXISTS', bkey) == 1
if bans and banDue(bkey, now) then return redis.error_reply('LB expired') end
local R = recordsOpen(meta, window, now, 13, 7, n)
local B = batchNew() -- the names (prelude's batched hash writes)

local capTimed = false -- the day counter has its expiry (this call)
local function one(i)
  local j = 13 + 7 * (i - 1)
  local member, name, evop = ARGV[j + 1], ARGV[j + 2], ARGV[j + 3]
  local rec = recordGet(R, i)
  if rec then return '1' .. rec end
  if bans and banned(member) then return '!banned' end
  local amount = tonumber(ARGV[j + 4])
  if not amount or amount ~= math.floor(amount) or amount > MAX or amount < -MAX then
    return '!invalid_score'
  end
  if evop ~= '1' or member == '' or string.find(member, '|', 1, true) then
    return '!bad_request'
  end
  -- R17 on a board without periods (rank.Board.Admit), then the bucket
  -- (rank.Decay.HotBucket).
  local t = now
  if ARGV[j + 6] ~= '' then
    t = tonumber(ARGV[j + 6])
    if not t then return '!bad_request' end
  end
  if t > now + 5000 then return '!at_ahead' end
  if startsAt and t < startsAt then return '!board_closed:not_started' end
  if endsAt and (t >= endsAt or now >= endsAt + grace) then return '!board_closed:ended' end
  local eb = math.min(math.floor(t / span), cb)
  if cb - eb >= nb then return '!board_closed:outside_window' end
  if maxSubs > 0 and tonumber(redis.call('HGET', counts, member) or '0') >= maxSubs then
    return '!limit_reached'
  end
  local capped = false
  if capPts and amount > 0 then
    local left = capPts - tonumber(redis.call('HGET', capKey, member) or '0')
    if left <= 0 then return '!limit_reached' end
    if amount > left then amount, capped = left, true end
  end

  local srec = redis.call('HGET', sums, member)
  local tb = parse(srec)
  local sum = (tb[eb] or 0) + amount
  if sum > MAXB or sum < -MAXB then return '!out_of_range' end

  local olds = redis.call('ZSCORE', zcur, member)
  local had = olds ~= false
  local prev, prevscore = 0, 0
  if had then
    prev = redis.call('ZCOUNT', zcur, '(' .. olds, '+inf') + 1
    prevscore = tonumber(olds)
    if order == 'asc' then prevscore = -prevscore end
  end

  tb[eb] = sum
  redis.call('HSET', sums, member, format(tb, cb - nb))
  local new = score(tb, cb)
  local sc = stored(new)
  redis.call('ZADD', zcur, sc, member)
  local rank = redis.call('ZCOUNT', zcur, '(' .. sc, '+inf') + 1
  if nxt then
    -- A build is under way: this member's next score, from its sums now.
    if inWindow(tb, nxt) then
      redis.call('ZADD', znext, stored(score(tb, nxt)), member)
    else
      redis.call('ZREM', znext, member)
    end
  end
  local seq = redis.call('INCR', KEYS[2])
  if maxSubs > 0 then redis.call('HINCRBY', counts, member, 1) end
  if capPts and amount > 0 then
    redis.call('HINCRBY', capKey, member, amount)
    if capExp and not capTimed and capExp > now then
      capTimed = true
      redis.call('PEXPIRE', capKey, capExp - now)
    end
  end
  if name ~= '' then batchSet(B, KEYS[3], member, name) end
  rec = string.format('%s,%d,%d,%d,%d,%d,0', ARGV[j + 5], new, rank, prev, prevscore, seq)
  if capped then rec = rec .. ',a' .. string.format('%d', amount) end
  recordPut(R, i, rec)
  return '0' .. rec
end

return runEvents(n, one, {function()
  local bad = batchFlush(B)
  if bad then error(bad, 0) end
end}, R)
