-- prelude.lua: the checks and helpers every script shares; lua.Source puts
-- this text before each script. Every script's header gives these KEYS and
-- ARGV the same meaning:
--
-- KEYS[1] <p>:{b}:cfg  hash: v = config version
-- KEYS[3] <p>:{b}:n    hash: member id -> display name
--
-- ARGV[1] config version the caller resolved the keys with
-- ARGV[2] now in unix ms, or "" to read the server's TIME (the one clock)
-- ARGV[3] start of slot A (unix ms)
-- ARGV[4] boundary: end of A = start of B (unix ms); 0 = no periods, always A
-- ARGV[5] end of slot B (unix ms)

-- refused is the error reply for a board that is gone or whose config
-- version is not the caller's, else nil.
local function refused()
  local ver = redis.call('HGET', KEYS[1], 'v')
  if not ver then return redis.error_reply('LB unknown_board') end
  if ver ~= ARGV[1] then return redis.error_reply('LB stale') end
  return nil
end

-- slotNow is the slot the clock falls in (1 = A, 2 = B) and the clock in
-- unix ms (0 on a board without periods, always A); nil when the clock is
-- outside both slots (the caller's estimate of it was off).
local function slotNow()
  local boundary = tonumber(ARGV[4])
  if boundary <= 0 then return 1, 0 end
  local now
  if ARGV[2] ~= '' then
    now = tonumber(ARGV[2])
  else
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  if now < tonumber(ARGV[3]) or now >= tonumber(ARGV[5]) then return nil end
  if now >= boundary then return 2, now end
  return 1, now
end

-- idsNames splits a ZREVRANGE ... WITHSCORES reply into member ids (the
-- "<16 digits>|" tie prefix cut off) and their names ("" when none), read
-- with HMGET in chunks so no unpack grows past Lua's stack limit.
local function idsNames(r)
  local ids, names = {}, {}
  for i = 1, #r, 2 do
    local id = r[i]
    if string.sub(id, 17, 17) == '|' then id = string.sub(id, 18) end
    ids[#ids + 1] = id
  end
  for i = 1, #ids, 500 do
    local part = redis.call('HMGET', KEYS[3], unpack(ids, i, math.min(i + 499, #ids)))
    for j = 1, #part do names[i + j - 1] = part[j] or '' end
  end
  return ids, names
end


-- clockMs is the clock in unix ms: ARGV[2], else the server's TIME.
local function clockMs()
  if ARGV[2] ~= '' then return tonumber(ARGV[2]) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- banDue reports whether a ban of the board's ban hash bkey has reached its
-- until at the clock now (nil: read it), so the caller must answer
-- "LB expired" and let ban.lua lift it before anything reads or writes
-- (R21: a ban whose until passed is lifted; it is never shown as banned).
-- The hash's field '|exp' holds the earliest until ('|' never occurs in a
-- member id).
local function banDue(bkey, now)
  local e = redis.call('HGET', bkey, '|exp')
  if not e then return false end
  return (now or clockMs()) >= tonumber(e)
end
