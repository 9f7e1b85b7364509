-- cohorttier.lua: a member's tier in a period of a league board (§12):
-- that of its cohort when it has one in the period, else the tier its next
-- placement would have: its tier, moved by the last period placed in when
-- the current period has not been placed in yet (apply.lua's leagueOpen,
-- read without writing).
--
-- KEYS[1] <p>:{b}:cfg   hash: v = config version, co = cohort config
--         (apply.lua); the league's keys are built from its prefix as
--         apply.lua builds them: k:<i>, k:<i>/<tier>.<n>, lg
-- KEYS[3] unused (the prelude names it; not passed)
--
-- ARGV[1]  config version the caller resolved the keys with
-- ARGV[2]  now in unix ms, or "" to read the server's TIME
-- ARGV[3]  start of the current slot A (unix ms)
-- ARGV[4]  boundary: end of A = start of B
-- ARGV[5]  end of slot B
-- ARGV[6]  period index of A
-- ARGV[7]  period index of B
-- ARGV[8]  the period asked: "" the current one, "p" the previous one,
--          else its index
-- ARGV[9]  the index of the period before A (the previous one while the
--          clock is in A)
-- ARGV[10] member id
--
-- Returns the tier's index (0 = the lowest). Errors "LB <code>":
-- unknown_board, stale, clock.

local err = refused()
if err then return err end
local slot = slotNow()
if not slot then return redis.error_reply('LB clock') end
local cur = ARGV[6]
if slot == 2 then cur = ARGV[7] end
local sel = cur
if ARGV[8] == 'p' then
  sel = ARGV[9]
  if slot == 2 then sel = ARGV[6] end
elseif ARGV[8] ~= '' then
  sel = ARGV[8]
end

local base = string.sub(KEYS[1], 1, -4) -- KEYS[1] ends in "cfg"
local member = ARGV[10]
local c = redis.call('HGET', base .. 'k:' .. sel, member)
if c then return tonumber(string.match(c, '^(%d+)%.')) end

local co = redis.call('HGET', KEYS[1], 'co')
local _, tiers, promote, demote = string.match(co or '', '^(%d+)%.(%d+)%.(%d+)%.(%d+)$')
if not tiers or tonumber(tiers) == 0 then return 0 end
local lg = base .. 'lg'
local t = tonumber(redis.call('HGET', lg, member) or '0')
local open = redis.call('HGET', lg, '#open')
if not open or tonumber(open) >= tonumber(cur) then return t end
-- The moves of period open are still to be made: this member's.
local oc = redis.call('HGET', base .. 'k:' .. open, member)
if not oc then return t end
local ms = redis.call('ZREVRANGE', base .. 'k:' .. open .. '/' .. oc, 0, -1)
for i = 1, #ms do
  local id = ms[i]
  if string.sub(id, 17, 17) == '|' then id = string.sub(id, 18) end
  if id == member then
    local ot, step = tonumber(string.match(oc, '^(%d+)%.')), 0
    if i <= tonumber(promote) then step = 1 elseif i > #ms - tonumber(demote) then step = -1 end
    return math.min(math.max(ot + step, 0), tonumber(tiers) - 1)
  end
end
return t
