set terminal pngcairo size 1400,420 font ',10'
set output 'docs/lowband/runs/1_h4_100mbit/report.png'
set multiplot layout 1,2 title 'gradwire lowband: 4 hosts, mlp'
set termoption noenhanced
set key bottom right font ',8'
set grid
set ylabel 'test accuracy'
set logscale x
set format x '%.0s%cB'
set xlabel 'bytes sent per rank (gradients + parameters)'
set title '100 Mbit/s'
plot 'docs/lowband/runs/1_h4_100mbit/report_runs/plotdata/100_dense.dat' using 3:2 with linespoints title 'dense', 'docs/lowband/runs/1_h4_100mbit/report_runs/plotdata/100_fp16.dat' using 3:2 with linespoints title 'fp16', 'docs/lowband/runs/1_h4_100mbit/report_runs/plotdata/100_dgc.dat' using 3:2 with linespoints title 'dgc', 'docs/lowband/runs/1_h4_100mbit/report_runs/plotdata/100_powersgd.dat' using 3:2 with linespoints title 'powersgd', 'docs/lowband/runs/1_h4_100mbit/report_runs/plotdata/100_powersgd_r4.dat' using 3:2 with linespoints title 'powersgd_r4', 'docs/lowband/runs/1_h4_100mbit/report_runs/plotdata/100_local_sgd_k16.dat' using 3:2 with linespoints title 'local_sgd_k16', 0.85 with lines dashtype 2 lc rgb 'black' title 'target'
set logscale x
set format x '%g'
set xlabel 'training time, evaluation excluded (s)'
set title '100 Mbit/s'
plot 'docs/lowband/runs/1_h4_100mbit/report_runs/plotdata/100_dense.dat' using 1:2 with linespoints title 'dense', 'docs/lowband/runs/1_h4_100mbit/report_runs/plotdata/100_fp16.dat' using 1:2 with linespoints title 'fp16', 'docs/lowband/runs/1_h4_100mbit/report_runs/plotdata/100_dgc.dat' using 1:2 with linespoints title 'dgc', 'docs/lowband/runs/1_h4_100mbit/report_runs/plotdata/100_powersgd.dat' using 1:2 with linespoints title 'powersgd', 'docs/lowband/runs/1_h4_100mbit/report_runs/plotdata/100_powersgd_r4.dat' using 1:2 with linespoints title 'powersgd_r4', 'docs/lowband/runs/1_h4_100mbit/report_runs/plotdata/100_local_sgd_k16.dat' using 1:2 with linespoints title 'local_sgd_k16', 0.85 with lines dashtype 2 lc rgb 'black' title 'target'
unset multiplot
