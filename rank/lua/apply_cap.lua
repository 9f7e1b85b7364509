-- apply_cap.lua: apply.lua's block for caps (docs/protocol.md §18, R39), on
-- when the apply config has the token "cap=<points>.<per>" (per: period or
-- day): a member's positive deltas within the event's period, or within
-- the UTC day of the call's clock, add up to at most <points>. The count
-- is read and moved in the event's own step, so racing events never pass
-- it. An event that would pass it applies what fits (its record ends in
-- ",a<applied>": capped); one with nothing left is refused
-- (limit_reached). A delta of 0 or below applies whole and neither uses nor
-- gives back cap. A duplicate is answered before the count is read.
--
-- Keys built from P (KEYS[1]'s prefix): P .. 'cap:' .. <period index>, the
-- hash member id -> points counted in that period (per period), or
-- P .. 'cap:d' .. <days since the epoch>, the same for that UTC day (per
-- day), which expires a day after the day ends.
if opt.cap then
  local points, per = string.match(opt.cap, '^(%d+)%.(%l+)$')
  points = tonumber(points)
  if not points or (per ~= 'period' and per ~= 'day') then return redis.error_reply('LB bad_request') end
  local dayKey, dayExp
  if per == 'day' then
    local day = math.floor(now / 86400000)
    dayKey, dayExp = P .. 'cap:d' .. fmt('%d', day), (day + 2) * 86400000
  end
  -- counter is the hash an event's points are counted in, and when it
  -- expires (unix ms on the call's clock).
  local function counter(ev)
    if dayKey then return dayKey, dayExp end
    return P .. 'cap:' .. ev.sl.idx, ev.sl.exp
  end
  hook('admit', function(ev)
    ev.capped = false
    if ev.amount <= 0 then return nil end
    local left = points - tonumber(call('HGET', (counter(ev)), ev.member) or '0')
    if left <= 0 then return 'limit_reached' end
    if ev.amount > left then ev.amount, ev.capped = left, true end
  end)
  local timed = {} -- the counters this call gave their expiry
  hook('write', function(ev)
    if ev.amount > 0 then
      local key, exp = counter(ev)
      call('HINCRBY', key, ev.member, ev.amount)
      if exp > now and not timed[key] then
        timed[key] = true
        call('PEXPIRE', key, exp - now)
      end
    end
    if ev.capped then ev.extra = (ev.extra or '') .. ',a' .. fmt('%d', ev.amount) end
  end)
end
