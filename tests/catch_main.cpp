// The one translation unit with Catch2's main; every test executable links it.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
