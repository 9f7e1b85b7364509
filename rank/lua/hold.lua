-- hold.lua: score integrity's operations outside apply.lua
-- (docs/protocol.md §16, R35; apply_hold.lua holds members and claims
-- events): record a hook's reject, list a period's held members, clear
-- one.
--
-- KEYS[1]  <p>:{b}:cfg    hash: v = config version, a = the apply config
--          (its fourth token the idempotency window, ms), the records'
--          fields rw, rs, ro, rb (prelude's)
-- KEYS[2]  <p>:{b}:seq    string: the board's change sequence
-- KEYS[3]  <p>:{b}:ban    hash: the board's bans (ban.lua)
-- KEYS[4]  <p>:{b}:z:<i>  sorted set of period i
-- KEYS[5]  <p>:{b}:m:<i>  hash: member id -> sorted-set member, period i
-- KEYS[6]  <p>:{b}:x:<i>  sorted set of period i's banned entries
-- KEYS[7]  <p>:{b}:q:<i>  sorted set of period i's held entries
-- KEYS[8]  <p>:{b}:hd:<i> hash: held member -> "<at ms>\t<reason>\t<ids>"
-- KEYS[9]  <p>:{b}:g      hash: member -> its recent gains
--          The idempotency records' bucket hashes are prelude's, built from
--          KEYS[1]'s prefix, as are a region board's keys of period i
--          (apply_region.lua): <p>:{b}:g:<i> (member -> its region) and
--          the region's sorted set <p>:{b}:g:<i>/<region>.
--
-- ARGV[1]  config version the caller resolved the keys with
-- ARGV[2]  now in unix ms, or "" to read the server's TIME
-- ARGV[3]  op: reject | list | clear
-- ARGV[4]  member id (reject, clear)
-- ARGV[5]  reject: the claim's token
-- ARGV[6]  reject: the hook's reason
-- ARGV[7]  reject: the event's payload hash
-- ARGV[8]  unused ("")
-- ARGV[9]  unused ("")
-- ARGV[10] reject: the event's request id
--
-- reject: writes "~<hash>:<reason>" as the event's record (apply_hold.lua's
-- header) in place of its claim, unless the record is an applied event's,
-- a kept verdict, or a live claim under another token (another caller's):
-- returns 1 when the reject stands (written now or before), else 0.
-- list: {member, record, stored score, ...} of every held member.
-- clear: shows a held member's entry again (in z, or in x while a live ban
-- hides it), on a region board in its region's set too (the region its
-- last event placed it in; a ban's lift puts it there), forgets its
-- recent gains and moves the board's seq; 0 when it is not held.
-- Errors "LB <code>": unknown_board, stale, nospec, bad_request.

local err = refused()
if err then return err end
local op, member = ARGV[3], ARGV[4]
local now = clockMs()

if op == 'reject' then
  local cf = redis.call('HMGET', KEYS[1], 'v', 'rw', 'rs', 'ro', 'rb', 'a')
  if not cf[6] then return redis.error_reply('LB nospec') end
  local window = tonumber(string.match(cf[6], '^%l+ %l+ %l+ (%d+)'))
  if not window then return redis.error_reply('LB bad_request') end
  -- Event 1's member and request id are ARGV[4] and ARGV[10] (a0 = 3, seven
  -- arguments an event).
  local R = recordsOpen(cf, window, now, 3, 7, 1)
  local rec = recordGet(R, 1)
  local hash, token = ARGV[7], ARGV[5]
  if rec then
    local c = string.sub(rec, 1, 1)
    if c == '~' then return 1 end
    if c ~= '?' then return 0 end
    local h, t, u = string.match(rec, '^%?([^.]*)%.([^:]*):(%d+)$')
    if h ~= hash or (t ~= token and tonumber(u) > now) then return 0 end
  end
  recordPut(R, 1, '~' .. hash .. ':' .. ARGV[6])
  recordsFlush(R)
  return 1
end

local z, m, x, q, hd = KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]

if op == 'list' then
  local all = redis.call('HGETALL', hd)
  local out = {}
  for i = 1, #all, 2 do
    local zm = redis.call('HGET', m, all[i]) or all[i]
    out[#out + 1] = all[i]
    out[#out + 1] = all[i + 1]
    out[#out + 1] = redis.call('ZSCORE', q, zm) or ''
  end
  return out
end

if op ~= 'clear' then return redis.error_reply('LB bad_request') end
if redis.call('HDEL', hd, member) == 0 then return 0 end
redis.call('HDEL', KEYS[9], member)
local zm = redis.call('HGET', m, member) or member
local sc = redis.call('ZSCORE', q, zm)
if sc then
  local ttl = redis.call('PTTL', q)
  redis.call('ZREM', q, zm)
  local function live(v)
    local u = tonumber(string.match(v or '', '^(%d+);'))
    return u and (u == 0 or now < u)
  end
  local b = redis.call('HMGET', KEYS[3], member, 'g|' .. member)
  local to = z
  if live(b[1]) or live(b[2]) then to = x end
  local fresh = redis.call('EXISTS', to) == 0
  redis.call('ZADD', to, sc, zm)
  if fresh and ttl > 0 then redis.call('PEXPIRE', to, ttl) end
  if to == z then
    local base = string.sub(KEYS[1], 1, -4) -- KEYS[1] ends in "cfg"
    local gh = base .. 'g:' .. string.sub(z, #base + 3)
    local region = redis.call('HGET', gh, member)
    if region then
      local rk = gh .. '/' .. region
      local rfresh = redis.call('EXISTS', rk) == 0
      redis.call('ZADD', rk, sc, zm)
      if rfresh and ttl > 0 then redis.call('PEXPIRE', rk, ttl) end
    end
  end
end
redis.call('INCR', KEYS[2])
return 1
