#!/bin/sh
# Runs inside each VM of a 2-node lab (scripts/lab.sh --nodes 2): node 1 serves the RDMA
# tests, node 2 runs the client tests against it. Usage: rdma_2node.sh TEST_PROGRAM
set -eu
test_program=$1
case ${FABRIC_LAB_NODE:?run through scripts/lab.sh --nodes 2} in
1) exec "$test_program" --gtest_filter='RdmaTwoNode.Agent' ;;
*) exec "$test_program" --gtest_filter='RdmaTwoNodeClient.*' ;;
esac
