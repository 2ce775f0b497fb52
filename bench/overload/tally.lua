-- wrk script: counts answers by status, and refusals (429/503) without Retry-After.
-- With WRK_BODY set (a file), sends POST with that JSON body.
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  statuses = {}
  missing_retry_after = 0
  local token = os.getenv("WRK_TOKEN")
  if token then
    wrk.headers["Authorization"] = "Bearer " .. token
  end
  local body_file = os.getenv("WRK_BODY")
  if body_file then
    local f = assert(io.open(body_file, "r"))
    wrk.body = f:read("*a")
    f:close()
    wrk.method = "POST"
    wrk.headers["Content-Type"] = "application/json"
  end
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
  if status == 429 or status == 503 then
    if headers["Retry-After"] == nil and headers["retry-after"] == nil then
      missing_retry_after = missing_retry_after + 1
    end
  end
end

function done(summary, latency, requests)
  local total = {}
  local missing = 0
  for _, t in ipairs(threads) do
    for k, v in pairs(t:get("statuses")) do
      total[k] = (total[k] or 0) + v
    end
    missing = missing + t:get("missing_retry_after")
  end
  for k, v in pairs(total) do
    io.write(string.format("status %d %d\n", k, v))
  end
  io.write(string.format("missing_retry_after %d\n", missing))
  io.write(string.format("requests %d\n", summary.requests))
  io.write(string.format("errors %d\n", summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
  io.write(string.format("duration_us %d\n", summary.duration))
  io.write(string.format("p50_us %d\n", latency:percentile(50)))
  io.write(string.format("p99_us %d\n", latency:percentile(99)))
  io.write(string.format("max_us %d\n", latency.max))
end
