# Sourced by scripts/fit-runtimes.sh and scripts/published-order.sh: the four published sets of
# profiles/reference/ and how their rows name what the files do not (cpplan calibrate --import).
# cache-dit's timings run diffusers' pipeline eager: the diffusers runtime. Each PixArt box is named
# by its topology file. published_maps takes the PixArt PipeFusion bars' unstated warm-up (steps).
# The families file names no runtime: its compiled rows take the compiled runtime (the importer's
# rule for compiled = true), the others xDiT's (--runtime xdit, which only its rows lack).
published_names=(published-flux published-xdit-pixart published-xdit-compiled published-xdit-families)
published_files=()
for name in "${published_names[@]}"; do published_files+=(--import "profiles/reference/$name.json"); done
published_maps() {
  printf '%s\n' --runtime xdit --runtime-for cache-dit=diffusers --runtime-for xdit-pixart-legacy=xdit \
    --runtime-for xdit-flux-compiled=compiled --model-for xdit-pixart-legacy=pixart-alpha \
    --topology-for "8 x A100 80GB SXM (NVLink, NVSwitch)=dgx-a100" \
    --topology-for "4 x A100 80GB on PCIe Gen4 under one switch, no NVLink=4x-a100-pcie" \
    --topology-for "8 x L20 48GB on PCIe=8x-l20-pcie" --warmup-for xdit-pixart-legacy="$1"
}
