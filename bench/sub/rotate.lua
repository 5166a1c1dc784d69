-- wrk script for the subscription benchmark: rotates through a file of request paths (one per line;
-- the driver writes the shuffled /sub/<id> list) and prints one JSON line (prefixed "BENCH_RESULT ")
-- that bench/lib/wrk.ts parses. No response() callback: with one, wrk hands every response to Lua,
-- which caps one wrk thread near 20,000 requests/s and measures the load generator instead of the
-- server. Error answers are counted by wrk itself (summary.errors.status: status 400 and above);
-- bodies are checked by the driver outside the measured window (validate.ts).
-- Usage: wrk ... -s rotate.lua <url> -- <paths file> <threads>

-- The paths stay one string (the whole file) and request() cuts the next line out of it: a table of a
-- million path strings took wrk 0.55 s to build before the first request (inside the window in which
-- the driver reads the server's CPU, so no server looked saturated at 1,000,000 users) and gave Lua's
-- collector a million live objects to mark while it freed each request's garbage.

local next_id = 0

function setup(thread)
  thread:set("id", next_id)
  next_id = next_id + 1
end

function init(args)
  local file = assert(io.open(args[1], "rb"))
  all = file:read("*a")
  file:close()
  -- one path per line (empty lines are skipped), the last one ended too
  if string.find(all, "[^\n]") == nil then error("no paths in " .. tostring(args[1])) end
  if string.sub(all, -1) ~= "\n" then all = all .. "\n" end
  -- each thread starts at its own slice of the list, so threads do not ask for the same user in step
  local thread_count = tonumber(args[2]) or 1
  position = 1
  if id > 0 and thread_count > 1 then
    local newline = string.find(all, "\n", math.floor(id * #all / thread_count) + 1, true)
    if newline ~= nil and newline < #all then position = newline + 1 end
  end
  -- the request wrk.format makes for a path, split around the path: the same bytes for every path
  local marker = "/__PATH__"
  local template = wrk.format("GET", marker)
  local at = string.find(template, marker, 1, true)
  before_path = string.sub(template, 1, at - 1)
  after_path = string.sub(template, at + #marker)
end

function request()
  -- bounded by the file's length; ends at the next non-empty line, and there is one
  for _ = 0, #all do
    if position > #all then position = 1 end
    local newline = string.find(all, "\n", position, true)
    if newline > position then
      local path = string.sub(all, position, newline - 1)
      position = newline + 1
      return before_path .. path .. after_path
    end
    position = newline + 1
  end
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
