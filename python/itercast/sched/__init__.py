"""Self-configuring scheduling (AutoSched): forecasting, search space and tuner."""
