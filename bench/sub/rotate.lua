-- wrk script for the subscription benchmark: rotates through a file of request paths (one per line;
-- the driver writes the shuffled /sub/<id> list), counts non-2xx answers, and prints one JSON line
-- (prefixed "BENCH_RESULT ") that bench/lib/wrk.ts parses.
-- Usage: wrk ... -s rotate.lua <url> -- <paths file> <threads>

local threads = {}
local next_id = 0

function setup(thread)
  thread:set("id", next_id)
  next_id = next_id + 1
  table.insert(threads, thread)
end

function init(args)
  paths = {}
  for line in io.lines(args[1]) do
    if #line > 0 then
      paths[#paths + 1] = line
    end
  end
  if #paths == 0 then
    error("no paths in " .. tostring(args[1]))
  end
  -- each thread starts at its own slice of the list, so threads do not ask for the same user in step
  local thread_count = tonumber(args[2]) or 1
  index = math.floor(id * #paths / thread_count) % #paths + 1
  non2xx = 0
end

function request()
  local path = paths[index]
  index = index % #paths + 1
  return wrk.format("GET", path)
end

function response(status, headers, body)
  if status < 200 or status > 299 then
    non2xx = non2xx + 1
  end
end

function done(summary, latency, requests)
  local non2xx_total = 0
  for _, thread in ipairs(threads) do
    non2xx_total = non2xx_total + (thread:get("non2xx") or 0)
  end
  local e = summary.errors
  local seconds = summary.duration / 1e6
  io.write(string.format(
    'BENCH_RESULT {"requests":%d,"seconds":%.3f,"rps":%.1f,"bytes":%d,' ..
      '"latency_ms":{"p50":%.3f,"p90":%.3f,"p99":%.3f,"max":%.3f,"mean":%.3f},' ..
      '"errors":{"non2xx":%d,"connect":%d,"read":%d,"write":%d,"timeout":%d}}\n',
    summary.requests, seconds, summary.requests / seconds, summary.bytes,
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
    latency.max / 1000, latency.mean / 1000,
    non2xx_total, e.connect, e.read, e.write, e.timeout))
end
