-- wrk script for the subscription benchmark: rotates through a file of request paths (one per line;
-- the driver writes the shuffled /sub/<id> list) and prints one JSON line (prefixed "BENCH_RESULT ")
-- that bench/lib/wrk.ts parses. No response() callback: with one, wrk hands every response to Lua,
-- which caps one wrk thread near 20,000 requests/s and measures the load generator instead of the
-- server. Error answers are counted by wrk itself (summary.errors.status: status 400 and above);
-- bodies are checked by the driver outside the measured window (validate.ts).
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
end

function request()
  local path = paths[index]
  index = index % #paths + 1
  return wrk.format("GET", path)
end

function done(summary, latency, requests)
  local e = summary.errors
  local seconds = summary.duration / 1e6
  io.write(string.format(
    'BENCH_RESULT {"requests":%d,"seconds":%.3f,"rps":%.1f,"bytes":%d,' ..
      '"latency_ms":{"p50":%.3f,"p90":%.3f,"p99":%.3f,"max":%.3f,"mean":%.3f},' ..
      '"errors":{"status":%d,"connect":%d,"read":%d,"write":%d,"timeout":%d}}\n',
    summary.requests, seconds, summary.requests / seconds, summary.bytes,
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
    latency.max / 1000, latency.mean / 1000,
    e.status, e.connect, e.read, e.write, e.timeout))
end
