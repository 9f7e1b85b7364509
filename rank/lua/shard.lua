-- shard.lua: reads of one shard of a sharded board (docs/protocol.md §9, R24);
-- the engine merges the shards' answers. A shard's keys are those of a
-- board whose hash tag is the shard's, {<board>#<i>} or {<board>#<i>.<k>}
-- (b#i below; rank/redisstore/shard.go), so every call runs on one slot.
--
-- KEYS[1] <p>:{b#i}:cfg    hash: v = config version (a copy of the board's)
-- KEYS[2] <p>:{b#i}:seq    string (unused here)
-- KEYS[3] <p>:{b#i}:n      hash: member id -> display name
-- KEYS[4] <p>:{b#i}:z:<k>  sorted set of the period read
-- KEYS[5] <p>:{b#i}:m:<k>  hash: member id -> sorted-set member
-- KEYS[6] <p>:{b#i}:ban    hash: the shard's bans (see ban.lua)
-- KEYS[7] <p>:{b#i}:meta:<k> hash: member id -> meta (§11) of the period read
--
-- ARGV[1] config version the caller resolved the keys with
-- ARGV[2] now in unix ms, or "" to read the server's TIME
-- ARGV[3] unused (0)
-- ARGV[4] unused (0): no period choice, KEYS[4] is the period read
-- ARGV[5] unused (0)
-- ARGV[6] op
-- ARGV[7] the op's first argument, more follow:
--   count: ARGV[7..] pairs (stored score, sorted-set member or "") ->
--          per pair the entries strictly better: a better score, or (unless
--          the member is "") the same score and a greater member (the REV
--          order of Redis, which is the board's order of ties); a member
--          is another shard's, placed for a moment (see placed)
--   meta:  ARGV[7..] pairs (stored score, raw member) of entries a page
--          read -> per pair {name, meta}, meta "" unless the member still
--          has that score (the meta shown is the one of that score, R26)
--   find:  ARGV[7..] member ids -> {total, then per member found, score,
--          raw member}
--   win:   ARGV[7] around, ARGV[8..] pairs (stored score, raw member) -> per
--          pair {better, better_score, above, below, then above + below
--          quadruples raw member, score, name, meta}: better as for count, better_score the entries of a
--          strictly better score, then up to `around` entries before that
--          position and up to around+1 from it, in rank order
--   scan:  ARGV[7] the stored score of a cursor ("" = from the first
--          entry), ARGV[8] and ARGV[9] below -> {before, better_score, then
--          up to limit quadruples raw member, score, name, meta}: the
--          entries after the cursor in rank order (an export's chunk,
--          docs/protocol.md §18), before the entries at or before it,
--          better_score those of a score better than its. KEYS[4] may be
--          the period's hidden-entry set (x:<k>) instead.
-- ARGV[8] scan: the cursor's sorted-set member
-- ARGV[9] scan: the most entries to answer (limit)
-- Scores as stored (negated on asc boards); names and meta "" when none. Errors
-- "LB <code>": unknown_board, stale, expired (a ban's until has passed),
-- bad_request.

local op = ARGV[6]
local zkey = KEYS[4]

-- gt compares bytes (Lua's < follows the server's locale).
local function gt(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x > y end
  end
  return #a > #b
end

-- keyOf is the tie key of a first/last sorted-set member "<16 digits>|<id>"
-- as two numbers (8 digits each: exact), which order such members as gt
-- does at a fraction of its cost; nil for another form.
local function keyOf(z)
  if string.sub(z, 17, 17) ~= '|' then return nil end
  local hi, lo = tonumber(string.sub(z, 1, 8)), tonumber(string.sub(z, 9, 16))
  if not hi or not lo then return nil end
  return {hi, lo}
end
-- after is gt(a, b) for members a and b with keys ka and kb (keyOf).
local function after(a, ka, b, kb)
  if ka and kb then
    if ka[1] ~= kb[1] then return ka[1] > kb[1] end
    if ka[2] ~= kb[2] then return ka[2] > kb[2] end
  end
  return gt(a, b)
end

-- better is the entries strictly better than (sc, z): those of a better
-- score, then (unless z is "") those of score sc whose member is greater
-- than z, found by bisection over their positions. What it reads is kept
-- for the call: per score its counts, per position its entry. Counts are
-- taken from below (ZCOUNT -inf ..): one end of that range is the skip
-- list's head, found without a search.
local card
local scores, at = {}, {}
local function entryAt(pos) -- member, key (nil past the end)
  local e = at[pos]
  if not e then
    e = redis.call('ZREVRANGE', zkey, pos, pos)
    if e[1] then e[2] = keyOf(e[1]) end
    at[pos] = e
  end
  return e[1], e[2]
end
local function better(sc, z)
  card = card or redis.call('ZCARD', zkey)
  local s = scores[sc]
  if not s then
    s = {gt = card - redis.call('ZCOUNT', zkey, '-inf', sc)}
    scores[sc] = s
  end
  if z == '' then return s.gt end
  if not s.ge then s.ge = card - redis.call('ZCOUNT', zkey, '-inf', '(' .. sc) end
  local kz = keyOf(z)
  local c, lo, hi = s.gt, 0, s.ge - s.gt
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local m, k = entryAt(c + mid)
    if after(m, k, z, kz) then lo = mid + 1 else hi = mid end
  end
  return c + lo
end

-- placed is better for a member z that is not in the sorted set (another
-- shard's): z is added at sc, its ZREVRANK is the answer, and it is
-- removed again, three commands where bisecting among many entries of
-- one score takes many. Neither write reaches replicas or the AOF
-- (set_repl), and the call leaves the set as it found it. Where Redis
-- refuses the write (maxmemory, min-replicas-to-write) or z is there
-- after all, better answers.
local quiet = false
local function placed(sc, z)
  if z == '' then return better(sc, z) end
  if not quiet then
    redis.set_repl(redis.REPL_NONE)
    quiet = true
  end
  local added = redis.pcall('ZADD', zkey, 'NX', sc, z)
  if added ~= 1 then return better(sc, z) end
  local r = redis.call('ZREVRANK', zkey, z)
  redis.call('ZREM', zkey, z)
  return r
end

-- quads appends raw member, score, name and meta of a WITHSCORES reply
-- to out: the meta read with the score, in this call (R26).
local function quads(r, out)
  local ids, names = idsNames(r)
  local metas = metasOf(KEYS[7], ids)
  for i = 1, #ids do
    out[#out + 1] = r[2 * i - 1]
    out[#out + 1] = r[2 * i]
    out[#out + 1] = names[i]
    out[#out + 1] = metas[i]
  end
end

if op == 'count' then
  local out = {}
  for a = 7, #ARGV, 2 do out[#out + 1] = placed(ARGV[a], ARGV[a + 1]) end
  return out
end

if op == 'meta' then
  local out = {}
  for a = 7, #ARGV, 2 do
    local z = ARGV[a + 1]
    local id = z
    if string.sub(z, 17, 17) == '|' then id = string.sub(z, 18) end
    out[#out + 1] = redis.call('HGET', KEYS[3], id) or ''
    local mt = ''
    if tonumber(redis.call('ZSCORE', zkey, z)) == tonumber(ARGV[a]) then mt = redis.call('HGET', KEYS[7], id) or '' end
    out[#out + 1] = mt
  end
  return out
end

local err = refused()
if err then return err end
if banDue(KEYS[6]) then return redis.error_reply('LB expired') end

if op == 'find' then
  local out = {redis.call('ZCARD', zkey)}
  for a = 7, #ARGV do
    local z = redis.call('HGET', KEYS[5], ARGV[a]) or ARGV[a]
    local sc = redis.call('ZSCORE', zkey, z)
    if sc then
      out[#out + 1] = 1
      out[#out + 1] = sc
      out[#out + 1] = z
    else
      out[#out + 1] = 0
      out[#out + 1] = ''
      out[#out + 1] = ''
    end
  end
  return out
elseif op == 'scan' then
  local sc, z, lim = ARGV[7], ARGV[8], tonumber(ARGV[9])
  if not lim or lim < 1 then return redis.error_reply('LB bad_request') end
  local pos, gts = 0, 0
  if sc ~= '' then
    local at = redis.call('ZSCORE', zkey, z)
    if at and tonumber(at) == tonumber(sc) then
      pos = redis.call('ZREVRANK', zkey, z) + 1 -- the cursor's own entry, still in its place
    else
      pos = placed(sc, z)
    end
    gts = better(sc, '')
  end
  local out = {pos, gts}
  quads(redis.call('ZREVRANGE', zkey, pos, pos + lim - 1, 'WITHSCORES'), out)
  return out
elseif op == 'win' then
  local around = tonumber(ARGV[7])
  local out = {}
  for a = 8, #ARGV, 2 do
    local sc, z = ARGV[a], ARGV[a + 1]
    local c = better(sc, z)
    out[#out + 1] = c
    out[#out + 1] = better(sc, '')
    local up = {}
    if c > 0 and around > 0 then
      up = redis.call('ZREVRANGE', zkey, math.max(0, c - around), c - 1, 'WITHSCORES')
    end
    local down = redis.call('ZREVRANGE', zkey, c, c + around, 'WITHSCORES')
    out[#out + 1] = #up / 2
    out[#out + 1] = #down / 2
    quads(up, out)
    quads(down, out)
  end
  return out
end
return redis.error_reply('LB bad_request')
