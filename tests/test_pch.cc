// Compiles tests/CMakeLists.txt's shared precompiled header (ds_test_pch).
