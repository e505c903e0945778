// large_tool.js: a ~2,000-line registered tool (helpers inside an IIFE),
// the workload of BenchmarkLargeTool: most of its cost is compiling it.
(() => {
  function step0(x) {
    const y = x * 2 + 0;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step1(x) {
    const y = x * 3 + 1;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step2(x) {
    const y = x * 4 + 2;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step3(x) {
    const y = x * 5 + 3;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step4(x) {
    const y = x * 6 + 4;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step5(x) {
    const y = x * 7 + 5;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step6(x) {
    const y = x * 8 + 6;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step7(x) {
    const y = x * 9 + 7;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step8(x) {
    const y = x * 10 + 8;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step9(x) {
    const y = x * 11 + 9;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step10(x) {
    const y = x * 12 + 10;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step11(x) {
    const y = x * 13 + 11;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step12(x) {
    const y = x * 14 + 12;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step13(x) {
    const y = x * 2 + 13;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step14(x) {
    const y = x * 3 + 14;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step15(x) {
    const y = x * 4 + 15;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step16(x) {
    const y = x * 5 + 16;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step17(x) {
    const y = x * 6 + 17;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step18(x) {
    const y = x * 7 + 18;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step19(x) {
    const y = x * 8 + 19;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step20(x) {
    const y = x * 9 + 20;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step21(x) {
    const y = x * 10 + 21;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step22(x) {
    const y = x * 11 + 22;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step23(x) {
    const y = x * 12 + 23;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step24(x) {
    const y = x * 13 + 24;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step25(x) {
    const y = x * 14 + 25;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step26(x) {
    const y = x * 2 + 26;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step27(x) {
    const y = x * 3 + 27;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step28(x) {
    const y = x * 4 + 28;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step29(x) {
    const y = x * 5 + 29;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step30(x) {
    const y = x * 6 + 30;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step31(x) {
    const y = x * 7 + 31;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step32(x) {
    const y = x * 8 + 32;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step33(x) {
    const y = x * 9 + 33;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step34(x) {
    const y = x * 10 + 34;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step35(x) {
    const y = x * 11 + 35;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step36(x) {
    const y = x * 12 + 36;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step37(x) {
    const y = x * 13 + 37;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step38(x) {
    const y = x * 14 + 38;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step39(x) {
    const y = x * 2 + 39;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step40(x) {
    const y = x * 3 + 40;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step41(x) {
    const y = x * 4 + 41;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step42(x) {
    const y = x * 5 + 42;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step43(x) {
    const y = x * 6 + 43;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step44(x) {
    const y = x * 7 + 44;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step45(x) {
    const y = x * 8 + 45;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step46(x) {
    const y = x * 9 + 46;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step47(x) {
    const y = x * 10 + 47;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step48(x) {
    const y = x * 11 + 48;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step49(x) {
    const y = x * 12 + 49;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step50(x) {
    const y = x * 13 + 50;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step51(x) {
    const y = x * 14 + 51;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step52(x) {
    const y = x * 2 + 52;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step53(x) {
    const y = x * 3 + 53;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step54(x) {
    const y = x * 4 + 54;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step55(x) {
    const y = x * 5 + 55;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step56(x) {
    const y = x * 6 + 56;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step57(x) {
    const y = x * 7 + 57;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step58(x) {
    const y = x * 8 + 58;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step59(x) {
    const y = x * 9 + 59;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step60(x) {
    const y = x * 10 + 60;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step61(x) {
    const y = x * 11 + 61;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step62(x) {
    const y = x * 12 + 62;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step63(x) {
    const y = x * 13 + 63;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step64(x) {
    const y = x * 14 + 64;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step65(x) {
    const y = x * 2 + 65;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step66(x) {
    const y = x * 3 + 66;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step67(x) {
    const y = x * 4 + 67;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step68(x) {
    const y = x * 5 + 68;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step69(x) {
    const y = x * 6 + 69;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step70(x) {
    const y = x * 7 + 70;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step71(x) {
    const y = x * 8 + 71;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step72(x) {
    const y = x * 9 + 72;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step73(x) {
    const y = x * 10 + 73;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step74(x) {
    const y = x * 11 + 74;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step75(x) {
    const y = x * 12 + 75;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step76(x) {
    const y = x * 13 + 76;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step77(x) {
    const y = x * 14 + 77;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step78(x) {
    const y = x * 2 + 78;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step79(x) {
    const y = x * 3 + 79;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step80(x) {
    const y = x * 4 + 80;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step81(x) {
    const y = x * 5 + 81;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step82(x) {
    const y = x * 6 + 82;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step83(x) {
    const y = x * 7 + 83;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step84(x) {
    const y = x * 8 + 84;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step85(x) {
    const y = x * 9 + 85;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step86(x) {
    const y = x * 10 + 86;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step87(x) {
    const y = x * 11 + 87;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step88(x) {
    const y = x * 12 + 88;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step89(x) {
    const y = x * 13 + 89;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step90(x) {
    const y = x * 14 + 90;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step91(x) {
    const y = x * 2 + 91;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step92(x) {
    const y = x * 3 + 92;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step93(x) {
    const y = x * 4 + 93;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step94(x) {
    const y = x * 5 + 94;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step95(x) {
    const y = x * 6 + 95;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step96(x) {
    const y = x * 7 + 96;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step97(x) {
    const y = x * 8 + 97;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step98(x) {
    const y = x * 9 + 98;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step99(x) {
    const y = x * 10 + 99;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step100(x) {
    const y = x * 11 + 100;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step101(x) {
    const y = x * 12 + 101;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step102(x) {
    const y = x * 13 + 102;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step103(x) {
    const y = x * 14 + 103;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step104(x) {
    const y = x * 2 + 104;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step105(x) {
    const y = x * 3 + 105;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step106(x) {
    const y = x * 4 + 106;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step107(x) {
    const y = x * 5 + 107;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step108(x) {
    const y = x * 6 + 108;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step109(x) {
    const y = x * 7 + 109;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step110(x) {
    const y = x * 8 + 110;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step111(x) {
    const y = x * 9 + 111;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step112(x) {
    const y = x * 10 + 112;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step113(x) {
    const y = x * 11 + 113;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step114(x) {
    const y = x * 12 + 114;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step115(x) {
    const y = x * 13 + 115;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step116(x) {
    const y = x * 14 + 116;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step117(x) {
    const y = x * 2 + 117;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step118(x) {
    const y = x * 3 + 118;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step119(x) {
    const y = x * 4 + 119;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step120(x) {
    const y = x * 5 + 120;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step121(x) {
    const y = x * 6 + 121;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step122(x) {
    const y = x * 7 + 122;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step123(x) {
    const y = x * 8 + 123;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step124(x) {
    const y = x * 9 + 124;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step125(x) {
    const y = x * 10 + 125;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step126(x) {
    const y = x * 11 + 126;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step127(x) {
    const y = x * 12 + 127;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step128(x) {
    const y = x * 13 + 128;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step129(x) {
    const y = x * 14 + 129;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step130(x) {
    const y = x * 2 + 130;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step131(x) {
    const y = x * 3 + 131;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step132(x) {
    const y = x * 4 + 132;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step133(x) {
    const y = x * 5 + 133;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step134(x) {
    const y = x * 6 + 134;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step135(x) {
    const y = x * 7 + 135;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step136(x) {
    const y = x * 8 + 136;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step137(x) {
    const y = x * 9 + 137;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step138(x) {
    const y = x * 10 + 138;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step139(x) {
    const y = x * 11 + 139;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step140(x) {
    const y = x * 12 + 140;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step141(x) {
    const y = x * 13 + 141;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step142(x) {
    const y = x * 14 + 142;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step143(x) {
    const y = x * 2 + 143;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step144(x) {
    const y = x * 3 + 144;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step145(x) {
    const y = x * 4 + 145;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step146(x) {
    const y = x * 5 + 146;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step147(x) {
    const y = x * 6 + 147;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step148(x) {
    const y = x * 7 + 148;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step149(x) {
    const y = x * 8 + 149;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step150(x) {
    const y = x * 9 + 150;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step151(x) {
    const y = x * 10 + 151;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step152(x) {
    const y = x * 11 + 152;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step153(x) {
    const y = x * 12 + 153;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step154(x) {
    const y = x * 13 + 154;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step155(x) {
    const y = x * 14 + 155;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step156(x) {
    const y = x * 2 + 156;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step157(x) {
    const y = x * 3 + 157;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step158(x) {
    const y = x * 4 + 158;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step159(x) {
    const y = x * 5 + 159;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step160(x) {
    const y = x * 6 + 160;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step161(x) {
    const y = x * 7 + 161;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step162(x) {
    const y = x * 8 + 162;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step163(x) {
    const y = x * 9 + 163;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step164(x) {
    const y = x * 10 + 164;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step165(x) {
    const y = x * 11 + 165;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step166(x) {
    const y = x * 12 + 166;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step167(x) {
    const y = x * 13 + 167;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step168(x) {
    const y = x * 14 + 168;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step169(x) {
    const y = x * 2 + 169;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step170(x) {
    const y = x * 3 + 170;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step171(x) {
    const y = x * 4 + 171;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step172(x) {
    const y = x * 5 + 172;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step173(x) {
    const y = x * 6 + 173;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step174(x) {
    const y = x * 7 + 174;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step175(x) {
    const y = x * 8 + 175;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step176(x) {
    const y = x * 9 + 176;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step177(x) {
    const y = x * 10 + 177;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step178(x) {
    const y = x * 11 + 178;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step179(x) {
    const y = x * 12 + 179;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step180(x) {
    const y = x * 13 + 180;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step181(x) {
    const y = x * 14 + 181;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step182(x) {
    const y = x * 2 + 182;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step183(x) {
    const y = x * 3 + 183;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step184(x) {
    const y = x * 4 + 184;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step185(x) {
    const y = x * 5 + 185;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step186(x) {
    const y = x * 6 + 186;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step187(x) {
    const y = x * 7 + 187;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step188(x) {
    const y = x * 8 + 188;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step189(x) {
    const y = x * 9 + 189;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step190(x) {
    const y = x * 10 + 190;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step191(x) {
    const y = x * 11 + 191;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step192(x) {
    const y = x * 12 + 192;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step193(x) {
    const y = x * 13 + 193;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step194(x) {
    const y = x * 14 + 194;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step195(x) {
    const y = x * 2 + 195;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step196(x) {
    const y = x * 3 + 196;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step197(x) {
    const y = x * 4 + 197;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step198(x) {
    const y = x * 5 + 198;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step199(x) {
    const y = x * 6 + 199;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step200(x) {
    const y = x * 7 + 200;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step201(x) {
    const y = x * 8 + 201;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step202(x) {
    const y = x * 9 + 202;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step203(x) {
    const y = x * 10 + 203;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step204(x) {
    const y = x * 11 + 204;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step205(x) {
    const y = x * 12 + 205;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step206(x) {
    const y = x * 13 + 206;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step207(x) {
    const y = x * 14 + 207;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step208(x) {
    const y = x * 2 + 208;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step209(x) {
    const y = x * 3 + 209;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step210(x) {
    const y = x * 4 + 210;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step211(x) {
    const y = x * 5 + 211;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step212(x) {
    const y = x * 6 + 212;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step213(x) {
    const y = x * 7 + 213;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step214(x) {
    const y = x * 8 + 214;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step215(x) {
    const y = x * 9 + 215;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step216(x) {
    const y = x * 10 + 216;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step217(x) {
    const y = x * 11 + 217;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step218(x) {
    const y = x * 12 + 218;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step219(x) {
    const y = x * 13 + 219;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step220(x) {
    const y = x * 14 + 220;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step221(x) {
    const y = x * 2 + 221;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step222(x) {
    const y = x * 3 + 222;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step223(x) {
    const y = x * 4 + 223;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step224(x) {
    const y = x * 5 + 224;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step225(x) {
    const y = x * 6 + 225;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step226(x) {
    const y = x * 7 + 226;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step227(x) {
    const y = x * 8 + 227;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step228(x) {
    const y = x * 9 + 228;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step229(x) {
    const y = x * 10 + 229;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step230(x) {
    const y = x * 11 + 230;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step231(x) {
    const y = x * 12 + 231;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step232(x) {
    const y = x * 13 + 232;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step233(x) {
    const y = x * 14 + 233;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step234(x) {
    const y = x * 2 + 234;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step235(x) {
    const y = x * 3 + 235;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step236(x) {
    const y = x * 4 + 236;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step237(x) {
    const y = x * 5 + 237;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step238(x) {
    const y = x * 6 + 238;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step239(x) {
    const y = x * 7 + 239;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step240(x) {
    const y = x * 8 + 240;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step241(x) {
    const y = x * 9 + 241;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step242(x) {
    const y = x * 10 + 242;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step243(x) {
    const y = x * 11 + 243;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step244(x) {
    const y = x * 12 + 244;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step245(x) {
    const y = x * 13 + 245;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step246(x) {
    const y = x * 14 + 246;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step247(x) {
    const y = x * 2 + 247;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step248(x) {
    const y = x * 3 + 248;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step249(x) {
    const y = x * 4 + 249;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step250(x) {
    const y = x * 5 + 250;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step251(x) {
    const y = x * 6 + 251;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step252(x) {
    const y = x * 7 + 252;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step253(x) {
    const y = x * 8 + 253;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step254(x) {
    const y = x * 9 + 254;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step255(x) {
    const y = x * 10 + 255;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step256(x) {
    const y = x * 11 + 256;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step257(x) {
    const y = x * 12 + 257;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step258(x) {
    const y = x * 13 + 258;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step259(x) {
    const y = x * 14 + 259;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step260(x) {
    const y = x * 2 + 260;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step261(x) {
    const y = x * 3 + 261;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step262(x) {
    const y = x * 4 + 262;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step263(x) {
    const y = x * 5 + 263;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step264(x) {
    const y = x * 6 + 264;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step265(x) {
    const y = x * 7 + 265;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step266(x) {
    const y = x * 8 + 266;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step267(x) {
    const y = x * 9 + 267;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step268(x) {
    const y = x * 10 + 268;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step269(x) {
    const y = x * 11 + 269;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step270(x) {
    const y = x * 12 + 270;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step271(x) {
    const y = x * 13 + 271;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step272(x) {
    const y = x * 14 + 272;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step273(x) {
    const y = x * 2 + 273;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step274(x) {
    const y = x * 3 + 274;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step275(x) {
    const y = x * 4 + 275;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step276(x) {
    const y = x * 5 + 276;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step277(x) {
    const y = x * 6 + 277;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step278(x) {
    const y = x * 7 + 278;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step279(x) {
    const y = x * 8 + 279;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step280(x) {
    const y = x * 9 + 280;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step281(x) {
    const y = x * 10 + 281;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step282(x) {
    const y = x * 11 + 282;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step283(x) {
    const y = x * 12 + 283;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step284(x) {
    const y = x * 13 + 284;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step285(x) {
    const y = x * 14 + 285;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step286(x) {
    const y = x * 2 + 286;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step287(x) {
    const y = x * 3 + 287;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step288(x) {
    const y = x * 4 + 288;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step289(x) {
    const y = x * 5 + 289;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step290(x) {
    const y = x * 6 + 290;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step291(x) {
    const y = x * 7 + 291;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step292(x) {
    const y = x * 8 + 292;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step293(x) {
    const y = x * 9 + 293;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step294(x) {
    const y = x * 10 + 294;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step295(x) {
    const y = x * 11 + 295;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step296(x) {
    const y = x * 12 + 296;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step297(x) {
    const y = x * 13 + 297;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step298(x) {
    const y = x * 14 + 298;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step299(x) {
    const y = x * 2 + 299;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step300(x) {
    const y = x * 3 + 300;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step301(x) {
    const y = x * 4 + 301;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step302(x) {
    const y = x * 5 + 302;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step303(x) {
    const y = x * 6 + 303;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step304(x) {
    const y = x * 7 + 304;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step305(x) {
    const y = x * 8 + 305;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step306(x) {
    const y = x * 9 + 306;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step307(x) {
    const y = x * 10 + 307;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step308(x) {
    const y = x * 11 + 308;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step309(x) {
    const y = x * 12 + 309;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step310(x) {
    const y = x * 13 + 310;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step311(x) {
    const y = x * 14 + 311;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step312(x) {
    const y = x * 2 + 312;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step313(x) {
    const y = x * 3 + 313;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step314(x) {
    const y = x * 4 + 314;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step315(x) {
    const y = x * 5 + 315;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step316(x) {
    const y = x * 6 + 316;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step317(x) {
    const y = x * 7 + 317;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step318(x) {
    const y = x * 8 + 318;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step319(x) {
    const y = x * 9 + 319;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step320(x) {
    const y = x * 10 + 320;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step321(x) {
    const y = x * 11 + 321;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step322(x) {
    const y = x * 12 + 322;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step323(x) {
    const y = x * 13 + 323;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step324(x) {
    const y = x * 14 + 324;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step325(x) {
    const y = x * 2 + 325;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step326(x) {
    const y = x * 3 + 326;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step327(x) {
    const y = x * 4 + 327;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step328(x) {
    const y = x * 5 + 328;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step329(x) {
    const y = x * 6 + 329;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step330(x) {
    const y = x * 7 + 330;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step331(x) {
    const y = x * 8 + 331;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step332(x) {
    const y = x * 9 + 332;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step333(x) {
    const y = x * 10 + 333;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step334(x) {
    const y = x * 11 + 334;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step335(x) {
    const y = x * 12 + 335;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step336(x) {
    const y = x * 13 + 336;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step337(x) {
    const y = x * 14 + 337;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step338(x) {
    const y = x * 2 + 338;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step339(x) {
    const y = x * 3 + 339;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step340(x) {
    const y = x * 4 + 340;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step341(x) {
    const y = x * 5 + 341;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step342(x) {
    const y = x * 6 + 342;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step343(x) {
    const y = x * 7 + 343;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step344(x) {
    const y = x * 8 + 344;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step345(x) {
    const y = x * 9 + 345;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step346(x) {
    const y = x * 10 + 346;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step347(x) {
    const y = x * 11 + 347;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step348(x) {
    const y = x * 12 + 348;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step349(x) {
    const y = x * 13 + 349;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step350(x) {
    const y = x * 14 + 350;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step351(x) {
    const y = x * 2 + 351;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step352(x) {
    const y = x * 3 + 352;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step353(x) {
    const y = x * 4 + 353;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step354(x) {
    const y = x * 5 + 354;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step355(x) {
    const y = x * 6 + 355;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step356(x) {
    const y = x * 7 + 356;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step357(x) {
    const y = x * 8 + 357;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step358(x) {
    const y = x * 9 + 358;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step359(x) {
    const y = x * 10 + 359;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step360(x) {
    const y = x * 11 + 360;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step361(x) {
    const y = x * 12 + 361;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step362(x) {
    const y = x * 13 + 362;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step363(x) {
    const y = x * 14 + 363;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step364(x) {
    const y = x * 2 + 364;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step365(x) {
    const y = x * 3 + 365;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step366(x) {
    const y = x * 4 + 366;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step367(x) {
    const y = x * 5 + 367;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step368(x) {
    const y = x * 6 + 368;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step369(x) {
    const y = x * 7 + 369;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step370(x) {
    const y = x * 8 + 370;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step371(x) {
    const y = x * 9 + 371;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step372(x) {
    const y = x * 10 + 372;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step373(x) {
    const y = x * 11 + 373;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step374(x) {
    const y = x * 12 + 374;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step375(x) {
    const y = x * 13 + 375;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step376(x) {
    const y = x * 14 + 376;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step377(x) {
    const y = x * 2 + 377;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step378(x) {
    const y = x * 3 + 378;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step379(x) {
    const y = x * 4 + 379;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step380(x) {
    const y = x * 5 + 380;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step381(x) {
    const y = x * 6 + 381;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step382(x) {
    const y = x * 7 + 382;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step383(x) {
    const y = x * 8 + 383;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step384(x) {
    const y = x * 9 + 384;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step385(x) {
    const y = x * 10 + 385;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step386(x) {
    const y = x * 11 + 386;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step387(x) {
    const y = x * 12 + 387;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step388(x) {
    const y = x * 13 + 388;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step389(x) {
    const y = x * 14 + 389;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step390(x) {
    const y = x * 2 + 390;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step391(x) {
    const y = x * 3 + 391;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step392(x) {
    const y = x * 4 + 392;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  function step393(x) {
    const y = x * 5 + 393;
    if (y % 7 === 0) return y / 7;
    return (y - 3) % 1000;
  }
  function step394(x) {
    const y = x * 6 + 394;
    if (y % 7 === 0) return y / 7;
    return (y - 4) % 1000;
  }
  function step395(x) {
    const y = x * 7 + 395;
    if (y % 7 === 0) return y / 7;
    return (y - 0) % 1000;
  }
  function step396(x) {
    const y = x * 8 + 396;
    if (y % 7 === 0) return y / 7;
    return (y - 1) % 1000;
  }
  function step397(x) {
    const y = x * 9 + 397;
    if (y % 7 === 0) return y / 7;
    return (y - 2) % 1000;
  }
  const steps = [step0, step1, step2, step3, step4, step5, step6, step7, step8, step9, step10, step11, step12, step13, step14, step15, step16, step17, step18, step19, step20, step21, step22, step23, step24, step25, step26, step27, step28, step29, step30, step31, step32, step33, step34, step35, step36, step37, step38, step39, step40, step41, step42, step43, step44, step45, step46, step47, step48, step49, step50, step51, step52, step53, step54, step55, step56, step57, step58, step59, step60, step61, step62, step63, step64, step65, step66, step67, step68, step69, step70, step71, step72, step73, step74, step75, step76, step77, step78, step79, step80, step81, step82, step83, step84, step85, step86, step87, step88, step89, step90, step91, step92, step93, step94, step95, step96, step97, step98, step99, step100, step101, step102, step103, step104, step105, step106, step107, step108, step109, step110, step111, step112, step113, step114, step115, step116, step117, step118, step119, step120, step121, step122, step123, step124, step125, step126, step127, step128, step129, step130, step131, step132, step133, step134, step135, step136, step137, step138, step139, step140, step141, step142, step143, step144, step145, step146, step147, step148, step149, step150, step151, step152, step153, step154, step155, step156, step157, step158, step159, step160, step161, step162, step163, step164, step165, step166, step167, step168, step169, step170, step171, step172, step173, step174, step175, step176, step177, step178, step179, step180, step181, step182, step183, step184, step185, step186, step187, step188, step189, step190, step191, step192, step193, step194, step195, step196, step197, step198, step199, step200, step201, step202, step203, step204, step205, step206, step207, step208, step209, step210, step211, step212, step213, step214, step215, step216, step217, step218, step219, step220, step221, step222, step223, step224, step225, step226, step227, step228, step229, step230, step231, step232, step233, step234, step235, step236, step237, step238, step239, step240, step241, step242, step243, step244, step245, step246, step247, step248, step249, step250, step251, step252, step253, step254, step255, step256, step257, step258, step259, step260, step261, step262, step263, step264, step265, step266, step267, step268, step269, step270, step271, step272, step273, step274, step275, step276, step277, step278, step279, step280, step281, step282, step283, step284, step285, step286, step287, step288, step289, step290, step291, step292, step293, step294, step295, step296, step297, step298, step299, step300, step301, step302, step303, step304, step305, step306, step307, step308, step309, step310, step311, step312, step313, step314, step315, step316, step317, step318, step319, step320, step321, step322, step323, step324, step325, step326, step327, step328, step329, step330, step331, step332, step333, step334, step335, step336, step337, step338, step339, step340, step341, step342, step343, step344, step345, step346, step347, step348, step349, step350, step351, step352, step353, step354, step355, step356, step357, step358, step359, step360, step361, step362, step363, step364, step365, step366, step367, step368, step369, step370, step371, step372, step373, step374, step375, step376, step377, step378, step379, step380, step381, step382, step383, step384, step385, step386, step387, step388, step389, step390, step391, step392, step393, step394, step395, step396, step397];
  return (args) => {
    let s = args.n;
    for (const f of steps) s = f(s);
    return { n: args.n, result: s };
  };
})()
