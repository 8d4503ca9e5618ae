# Precompiled headers for the planning libraries: the third-party and standard headers most of
# their sources include, parsed once per library instead of once per source (on one core CLI11
# takes about 3 s to parse, nlohmann/json 1 s, toml++ 0.8 s, and the standard headers another
# second). `cpplan`, which scripts/run.sh builds alone, compiles in about half the CPU time.
# -DCPPLAN_PCH=OFF builds without them, to check that each source includes what it uses.
option(CPPLAN_PCH "Precompile the heavy headers of each planning library" ON)

set(CPPLAN_PCH_STD <algorithm> <cmath> <functional> <map> <memory> <optional> <ostream> <set> <sstream>
    <string> <string_view> <unordered_map> <vector>)

# Precompiles `headers` (angle-bracket names) and the standard headers above for `target`.
function(cpplan_precompile target)
  if(CPPLAN_PCH AND NOT CPPLAN_FUZZ)
    target_precompile_headers(${target} PRIVATE ${CPPLAN_PCH_STD} ${ARGN})
  endif()
endfunction()
