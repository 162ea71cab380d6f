"""Operations: what the lake's tables and flows are doing (``icetide status``)."""
