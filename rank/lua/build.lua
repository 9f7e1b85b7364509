-- build.lua: recompute some members of a derived board (docs/protocol.md §8,
-- R23) from its sources, each member's every view set to its exact sum as
-- of this atomic step. Creating a derived board over sources that hold data
-- runs it over every member, in short calls: apply.lua already maintains
-- the views meanwhile, so a member overwritten here stays exact after.
--
-- One builder at a time (rank/redisstore/build.go): every call checks and
-- renews a lease, so two PUTs or two nodes never build the same board at
-- once, and a builder that died hands over when the lease lapses on the
-- store clock. Two builders at once would still be correct (each call is
-- exact at its step); the lease saves the work twice over. The builder's
-- position in its scan of the sources is saved with the call that finishes
-- a scan page, so whoever takes over goes on from there.
--
-- KEYS[1]        <p>:{g}..:cfg   hash of the derived board: v = config version,
--                                b = 1 while the build is not done
-- KEYS[2]        <p>:{g}..:ban   its ban hash (a banned member's entries go to x)
-- KEYS[3]        <p>:{g}..:n     its names
-- KEYS[4]        <p>:{g}..:bl    the build lease: "<expires at, unix ms>|<holder token>"
-- KEYS[5]        <p>:{g}..:bp    hash: the saved position: r = server run_id,
--                                s = plan signature, c = scan step, k = cursor
-- KEYS[4+2v]     <p>:{g}..:z:<i> view v's sorted set (v = 1..K)
-- KEYS[5+2v]     <p>:{g}..:x:<i> view v's hidden entries
-- KEYS[3+2K+3c]  cell c's sorted set: source s, period q (c = 1..C, by period
--                then source, so each view is a range of cells)
-- KEYS[4+2K+3c]  cell c's member hash (tie-prefixed sorted-set members)
-- KEYS[5+2K+3c]  cell c's hidden entries (bans on the source)
-- then the sources' name hashes: a member's name, when the derived board
-- has none yet for it, is the first source's that has one (HSETNX: a name
-- an event wrote meanwhile is newer)
--
-- ARGV[1]  config version of the derived board the caller resolved
-- ARGV[2]  now in unix ms, or "" to read the server's TIME
-- ARGV[3]  K, the number of views
-- ARGV[4]  C, the number of cells
-- ARGV[5]  order of the sources: desc | asc
-- ARGV[6]  op: resume | build | finish
-- ARGV[7]  the caller's lease token
-- ARGV[8]  lease length in ms
-- ARGV[9]  work budget of this call (at least one member is always done), in
--          units of one read of a member (HGET, ZSCORE, HMGET): a ZADD counts 6,
--          a ZREM or HSETNX 2 (their Redis time on 1M-member sets, measured in
--          docs/performance.md)
-- ARGV[10] plan signature (views and cells); a saved position of another
--          plan is not resumed
-- ARGV[11] op build: the position "<step>:<cursor>" to save once every
--          member given is done ("" = save nothing)
-- ARGV[12+3(v-1)], ARGV[13+3(v-1)], ARGV[14+3(v-1)]: view v's first and
--          last cell, and its expiry time in unix ms (0 = never)
-- then C weights, one a cell, then (op build) the member ids to recompute.
--
-- Replies, by op (every op first takes or renews the lease; another
-- holder's unexpired lease answers {"busy"}, a board whose b is gone
-- answers {"done"}):
--   resume  {"go", step, cursor}: the saved position (0, "0" for none, or
--           one saved on another server process, whose cursors mean
--           nothing here, or for another plan)
--   build   {"step", n}: n members recomputed, the first n given
--   finish  {"done"}: b, the position and the lease cleared
-- A member with an entry in no cell of a view has none in it. Errors
-- "LB <code>": unknown_board, stale.

local err = refused()
if err then return err end
local K, C = tonumber(ARGV[3]), tonumber(ARGV[4])
local asc = ARGV[5] == 'asc'
local op, token = ARGV[6], ARGV[7]
local now = clockMs()
local lkey, pkey = KEYS[4], KEYS[5]

local held = redis.call('GET', lkey)
if held then
  local exp, holder = string.match(held, '^(%d+)|(.*)$')
  if holder ~= token and tonumber(exp) > now then return {'busy'} end
end
if redis.call('HEXISTS', KEYS[1], 'b') == 0 then return {'done'} end
local ms = tonumber(ARGV[8])
-- The key's own TTL only collects a lease nobody renews; who holds it is
-- decided on the store clock above.
redis.call('SET', lkey, string.format('%d|%s', now + ms, token), 'PX', 10 * ms)

local function runID()
  return string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
end

if op == 'resume' then
  local p = redis.call('HMGET', pkey, 'r', 's', 'c', 'k')
  if p[1] and p[1] == runID() and p[2] == ARGV[10] then
    return {'go', tonumber(p[3]), p[4]}
  end
  return {'go', 0, '0'}
end
if op == 'finish' then
  redis.call('HDEL', KEYS[1], 'b')
  redis.call('DEL', pkey, lkey)
  return {'done'}
end

local vb = 12
local wb = vb + 3 * K
local mb = wb + C
local bkey = KEYS[2]
local bans = redis.call('EXISTS', bkey) == 1
-- Which keys exist, read once a call: a cell or view key that does not
-- exist costs no call per member (a window's future periods, old views,
-- hidden entries where nobody is banned). A key this call creates is
-- marked as it goes.
local cz, cm, cx = {}, {}, {}
for c = 1, C do
  local k = 3 + 2 * K + 3 * c
  cz[c] = redis.call('EXISTS', KEYS[k]) == 1
  cm[c] = redis.call('EXISTS', KEYS[k + 1]) == 1
  cx[c] = redis.call('EXISTS', KEYS[k + 2]) == 1
end
local vz, vx = {}, {}
local wz, wx = {}, {} -- view keys this call wrote to
for v = 1, K do
  vz[v] = redis.call('EXISTS', KEYS[4 + 2 * v]) == 1
  vx[v] = redis.call('EXISTS', KEYS[5 + 2 * v]) == 1
end
local names = {}
for k = 6 + 2 * K + 3 * C, #KEYS do
  if redis.call('EXISTS', KEYS[k]) == 1 then names[#names + 1] = KEYS[k] end
end

local budget = tonumber(ARGV[9])
local READ, ADD, REM = 1, 6, 2
local work = 0
local n = 0
for i = mb, #ARGV do
  if n > 0 and work >= budget then break end
  local m = ARGV[i]
  local pre, cnt = {[0] = 0}, {[0] = 0}
  for c = 1, C do
    local k = 3 + 2 * K + 3 * c
    local sc
    if cz[c] or cx[c] then
      local zm = m
      if cm[c] then
        zm = redis.call('HGET', KEYS[k + 1], m) or m
        work = work + READ
      end
      if cz[c] then
        sc = redis.call('ZSCORE', KEYS[k], zm)
        work = work + READ
      end
      if not sc and cx[c] then
        sc = redis.call('ZSCORE', KEYS[k + 2], zm)
        work = work + READ
      end
    end
    local v, h = 0, 0
    if sc then
      v = tonumber(sc)
      if asc then v = -v end
      v, h = v * tonumber(ARGV[wb + c - 1]), 1
    end
    pre[c], cnt[c] = pre[c - 1] + v, cnt[c - 1] + h
  end
  local banned = false
  if bans then
    local r = redis.call('HMGET', bkey, m, 'g|' .. m)
    banned = (r[1] or r[2]) and true or false
    work = work + READ
  end
  for v = 1, K do
    local j = vb + 3 * (v - 1)
    local lo, hi, exp = tonumber(ARGV[j]), tonumber(ARGV[j + 1]), tonumber(ARGV[j + 2])
    local z, x = KEYS[4 + 2 * v], KEYS[5 + 2 * v]
    if exp == 0 or exp > now then
      if cnt[hi] - cnt[lo - 1] > 0 then
        local sum = pre[hi] - pre[lo - 1]
        if asc then sum = -sum end
        local hide = banned
        if not hide and vx[v] then
          hide = redis.call('ZSCORE', x, m) and true or false
          work = work + READ
        end
        if hide then
          redis.call('ZADD', x, string.format('%d', sum), m)
          vx[v], wx[v] = true, true
          if vz[v] then redis.call('ZREM', z, m); work = work + REM end
        else
          redis.call('ZADD', z, string.format('%d', sum), m)
          vz[v], wz[v] = true, true
          if vx[v] then redis.call('ZREM', x, m); work = work + REM end
        end
        work = work + ADD
      else
        if vz[v] then redis.call('ZREM', z, m); work = work + REM end
        if vx[v] then redis.call('ZREM', x, m); work = work + REM end
      end
    end
  end
  for _, key in ipairs(names) do
    local name = redis.call('HGET', key, m)
    work = work + READ
    if name then
      redis.call('HSETNX', KEYS[3], m, name)
      work = work + REM
      break
    end
  end
  n = n + 1
end

-- A view key that got its first entry here expires with its period, as
-- apply.lua's would.
for v = 1, K do
  local exp = tonumber(ARGV[vb + 3 * (v - 1) + 2])
  if exp > now then
    if wz[v] and redis.call('PTTL', KEYS[4 + 2 * v]) == -1 then redis.call('PEXPIRE', KEYS[4 + 2 * v], exp - now) end
    if wx[v] and redis.call('PTTL', KEYS[5 + 2 * v]) == -1 then redis.call('PEXPIRE', KEYS[5 + 2 * v], exp - now) end
  end
end

if n == #ARGV - mb + 1 and ARGV[11] ~= '' then
  local c, k = string.match(ARGV[11], '^(%d+):(%d+)$')
  redis.call('HSET', pkey, 'r', runID(), 's', ARGV[10], 'c', c, 'k', k)
  redis.call('PEXPIRE', pkey, 7 * 24 * 3600 * 1000)
end
return {'step', n}
