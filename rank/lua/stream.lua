-- stream.lua: a board's frame stream as a resume compares with it (§15):
-- record the transitions of its schedule that the clock has passed, each
-- the first time any node sees it, at one new seq; or renew its epoch.
--
-- KEYS[1] <p>:{b}:cfg  hash: v = config version, e = the board's epoch (set
--         here the first time, so a board made again gets a new one: its
--         cfg hash is deleted with it)
-- KEYS[2] <p>:{b}:seq  string: the board's change sequence
-- KEYS[3] <p>:{b}:n    unused (the prelude names it)
-- KEYS[4] <p>:{b}:mk   hash: "<unix ms>" = the seq at which the transition at
--         that moment was first recorded; "s" = the schedule key recorded
--         and "ss" the seq at which it was
--
-- ARGV[1] config version the caller resolved the keys with
-- ARGV[2] now in unix ms, or "" to read the server's TIME (the one clock)
-- ARGV[3] op: "mark" or "renew"
-- ARGV[4] a fresh epoch: the board's when it has none yet, or (renew) its
--         new one
-- ARGV[5] mark: the config's schedule key (rank.Board.ScheduleKey);
--         renew: the epoch to replace
-- ARGV[6] mark: the oldest transition to keep (unix ms); older ones are
--         dropped
-- ARGV[7..] mark: the config's latest transitions (unix ms), ascending;
--         those after the clock are left for later
--
-- A transition is recorded when it is after every one recorded, or when
-- the schedule key changed and it is not recorded yet: a schedule change
-- may put transitions in the past.
--
-- Returns (mark) {epoch, seq, schedule key, schedule seq, at1, seq1, at2,
-- seq2, ...} with the recorded transitions ascending; (renew) the epoch.
-- Errors "LB unknown_board", "LB stale".

local err = refused()
if err then return err end
local epoch = redis.call('HGET', KEYS[1], 'e')
if ARGV[3] == 'renew' then
  if not epoch or epoch == ARGV[5] then
    epoch = ARGV[4]
    redis.call('HSET', KEYS[1], 'e', epoch)
  end
  return epoch
end
if not epoch then
  epoch = ARGV[4]
  redis.call('HSET', KEYS[1], 'e', epoch)
end

local now = clockMs()
local all = redis.call('HGETALL', KEYS[4])
local marks, names = {}, {}
local latest = nil
local sched, sseq = '', 0
for i = 1, #all, 2 do
  local f, v = all[i], all[i + 1]
  if f == 's' then
    sched = v
  elseif f == 'ss' then
    sseq = tonumber(v)
  else
    local at = tonumber(f)
    marks[at], names[at] = tonumber(v), f
    if not latest or at > latest then latest = at end
  end
end

local changed = sched ~= ARGV[5]
local add = {}
for i = 7, #ARGV do
  local at = tonumber(ARGV[i])
  if at <= now and ((not latest or at > latest) or (changed and not marks[at])) then
    add[#add + 1] = i
  end
end
local seq = tonumber(redis.call('GET', KEYS[2]) or '0')
if #add > 0 or changed then
  seq = redis.call('INCR', KEYS[2])
  local fields = {}
  for _, i in ipairs(add) do
    local at = tonumber(ARGV[i])
    marks[at], names[at] = seq, ARGV[i]
    fields[#fields + 1] = ARGV[i]
    fields[#fields + 1] = seq
  end
  if changed then
    sched, sseq = ARGV[5], seq
    fields[#fields + 1] = 's'
    fields[#fields + 1] = sched
    fields[#fields + 1] = 'ss'
    fields[#fields + 1] = seq
  end
  redis.call('HSET', KEYS[4], unpack(fields))
end

local keep = tonumber(ARGV[6])
local ats, drop = {}, {}
for at in pairs(marks) do
  if at < keep then drop[#drop + 1] = names[at] else ats[#ats + 1] = at end
end
for i = 1, #drop, 500 do
  redis.call('HDEL', KEYS[4], unpack(drop, i, math.min(i + 499, #drop)))
end
table.sort(ats)
local out = {epoch, seq, sched, sseq}
for _, at in ipairs(ats) do
  out[#out + 1] = names[at]
  out[#out + 1] = marks[at]
end
return out
