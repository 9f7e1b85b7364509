-- ban.lua: bans and removal (docs/protocol.md §7, R21) on one board: hide a
-- member's entries, put them back, lift expired bans, remove an entry.
--
-- KEYS[1]     <p>:{b}:cfg    hash: v = config version
-- KEYS[2]     <p>:{b}:seq    string: the board's change sequence
-- KEYS[3]     <p>:{b}:n      hash: member id -> display name (unused here)
-- KEYS[4]     <p>:{b}:ban    hash: member id -> ban record "<until ms>;<JSON>"
--             (until 0 = none) for the board's own bans, "g|<member>" -> the
--             same for its copy of a global ban, '|exp' -> earliest until
-- KEYS[5+3k]  <p>:{b}:z:<i>  sorted set of a kept period i (k = 0, 1, ...)
-- KEYS[6+3k]  <p>:{b}:m:<i>  hash: member id -> sorted-set member, period i
-- KEYS[7+3k]  <p>:{b}:x:<i>  sorted set of period i's hidden entries (same
--             sorted-set members and scores as they had in z:<i>)
--
-- ARGV[1] config version the caller resolved the keys with
-- ARGV[2] now in unix ms, or "" to read the server's TIME
-- ARGV[3] unused (0)
-- ARGV[4] unused (0)
-- ARGV[5] unused (0)
-- ARGV[6] op: ban | lift | expire | remove
-- ARGV[7] member id (ban, lift, remove)
-- ARGV[8] field of the ban hash: the member id, or "g|" .. member (ban, lift)
-- ARGV[9] the ban record (ban); k, the period whose entry goes (remove)
--
-- Returns 0 for a lift of a ban that is not there or a remove of a member
-- without an entry in period k, else 1. The board's seq moves by one when
-- what reads show changed (the ban of a member not yet hidden, a lift or
-- expiry that shows one, a removal), as on the memory engine.
-- Every op first lifts the bans whose until has passed. Hiding moves the
-- member's entry of every period passed from z to x, keeping its score and
-- tie prefix; showing moves it back, only when no live ban is left. An
-- emptied key loses its TTL, so the moved-to key takes the moved-from one's.
-- On a cohort or region board (apply.lua's "cohorts" and "regions") the
-- entry leaves its group's sorted set with it and comes back to it; a
-- removal drops it there too, and on a region board the member's placement
-- (its next event places it anew). A removal drops a held entry too, with
-- its queue entry (apply_hold.lua's q:<i> and hd:<i>). Those keys are
-- named after the period's as apply.lua names them.
-- Errors "LB <code>": unknown_board, stale, bad_request.

local err = refused()
if err then return err end
if (#KEYS - 4) % 3 ~= 0 then return redis.error_reply('LB bad_request') end

local bkey = KEYS[4]
local op, member, field = ARGV[6], ARGV[7], ARGV[8]
if op ~= 'ban' and op ~= 'lift' and op ~= 'expire' and op ~= 'remove' then
  return redis.error_reply('LB bad_request')
end
local now = clockMs()

local function untilOf(v) return tonumber(string.match(v, '^(%d+);')) or 0 end
local function live(v) local u = untilOf(v); return u == 0 or now < u end

local function banned(m)
  local r = redis.call('HMGET', bkey, m, 'g|' .. m)
  return (r[1] and live(r[1])) or (r[2] and live(r[2])) or false
end

-- groupSet is member m's group's sorted set in the period of sorted set
-- zkey (<p>:{b}:z:<i>), its cohort's (k:<i>/<c>) or its region's
-- (g:<i>/<r>), and the groups' hash; nil when the board has no groups or m
-- none.
local base = string.sub(KEYS[1], 1, -4) -- KEYS[1] ends in "cfg"
-- A league's cohort sets expire only once its moves are made (apply.lua).
local league = string.match(redis.call('HGET', KEYS[1], 'co') or '', '^%d+%.[1-9]') ~= nil
local function groupSet(zkey, m)
  local i = string.sub(zkey, #base + 3)
  for _, h in ipairs({'k:', 'g:'}) do
    local gh = base .. h .. i
    local c = redis.call('HGET', gh, m)
    if c then return gh .. '/' .. c, gh end
  end
end

local function move(m, hide)
  for k = 5, #KEYS, 3 do
    local from, to = KEYS[k], KEYS[k + 2]
    if not hide then from, to = to, from end
    local zm = redis.call('HGET', KEYS[k + 1], m) or m
    local sc = redis.call('ZSCORE', from, zm)
    if sc then
      local ttl = redis.call('PTTL', from)
      redis.call('ZREM', from, zm)
      local fresh = redis.call('EXISTS', to) == 0
      redis.call('ZADD', to, sc, zm)
      if fresh and ttl > 0 then redis.call('PEXPIRE', to, ttl) end
      local cs = groupSet(KEYS[k], m)
      if cs and hide then
        redis.call('ZREM', cs, zm)
      elseif cs then
        local cfresh = redis.call('EXISTS', cs) == 0
        redis.call('ZADD', cs, sc, zm)
        if cfresh and ttl > 0 and not league then redis.call('PEXPIRE', cs, ttl) end
      end
    end
  end
end

local function resetExp()
  local all = redis.call('HGETALL', bkey)
  local min
  for i = 1, #all, 2 do
    if all[i] ~= '|exp' then
      local u = untilOf(all[i + 1])
      if u > 0 and (not min or u < min) then min = u end
    end
  end
  if min then
    redis.call('HSET', bkey, '|exp', min)
  else
    redis.call('HDEL', bkey, '|exp')
  end
end

-- bump: something a read shows changed, so the board's seq moves once.
local bump = false

-- Lift every ban whose until has passed; show the members left unbanned.
if banDue(bkey, now) then
  local all = redis.call('HGETALL', bkey)
  local freed = {}
  for i = 1, #all, 2 do
    if all[i] ~= '|exp' and not live(all[i + 1]) then
      redis.call('HDEL', bkey, all[i])
      local m = all[i]
      if string.sub(m, 1, 2) == 'g|' then m = string.sub(m, 3) end
      freed[#freed + 1] = m
    end
  end
  for _, m in ipairs(freed) do
    if not banned(m) then
      move(m, false)
      bump = true
    end
  end
  resetExp()
end

local result = 1
if op == 'ban' then
  local was = banned(member)
  redis.call('HSET', bkey, field, ARGV[9])
  resetExp()
  if not was then
    move(member, true)
    bump = true
  end
elseif op == 'lift' then
  if redis.call('HDEL', bkey, field) == 0 then
    result = 0
  else
    resetExp()
    if not banned(member) then
      move(member, false)
      bump = true
    end
  end
elseif op == 'remove' then
  local k = tonumber(ARGV[9])
  if not k or 7 + 3 * k > #KEYS then return redis.error_reply('LB bad_request') end
  local z, mh, x = KEYS[5 + 3 * k], KEYS[6 + 3 * k], KEYS[7 + 3 * k]
  local zm = redis.call('HGET', mh, member) or member
  -- A held member's entry (apply_hold.lua) goes with its queue entry.
  local idx = string.sub(z, #base + 3)
  local held = redis.call('ZREM', base .. 'q:' .. idx, zm) + redis.call('HDEL', base .. 'hd:' .. idx, member)
  if redis.call('ZREM', z, zm) + redis.call('ZREM', x, zm) + held == 0 then
    result = 0
  else
    local cs, gh = groupSet(z, member)
    if cs then redis.call('ZREM', cs, zm) end
    -- A region's placement goes with the entry; a cohort seat stays (R27).
    if gh and string.sub(gh, #base + 1, #base + 2) == 'g:' then redis.call('HDEL', gh, member) end
    redis.call('HDEL', mh, member)
    bump = true
  end
end

if bump then redis.call('INCR', KEYS[2]) end
return result
