set terminal pngcairo size 1400,420 font ',10'
set output '/tmp/lb6/h4_10/report.png'
set multiplot layout 1,2 title 'gradwire lowband: 4 hosts, mlp'
set termoption noenhanced
set key bottom right font ',8'
set grid
set ylabel 'test accuracy'
set logscale x
set format x '%.0s%cB'
set xlabel 'bytes sent per rank (gradients + parameters)'
set title '10 Mbit/s'
plot '/tmp/lb6/h4_10/report_runs/plotdata/10_dense.dat' using 3:2 with linespoints title 'dense', '/tmp/lb6/h4_10/report_runs/plotdata/10_fp16.dat' using 3:2 with linespoints title 'fp16', 0.85 with lines dashtype 2 lc rgb 'black' title 'target'
set logscale x
set format x '%g'
set xlabel 'training time, evaluation excluded (s)'
set title '10 Mbit/s'
plot '/tmp/lb6/h4_10/report_runs/plotdata/10_dense.dat' using 1:2 with linespoints title 'dense', '/tmp/lb6/h4_10/report_runs/plotdata/10_fp16.dat' using 1:2 with linespoints title 'fp16', 0.85 with lines dashtype 2 lc rgb 'black' title 'target'
unset multiplot
