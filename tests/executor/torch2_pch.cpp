// The translation unit that compiles the LibTorch 2.x precompiled header of the syntax check
// (tests/CMakeLists.txt, cpplan_torch2_pch); it holds no code of its own.
